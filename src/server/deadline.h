// Deadlines: when a request's first token is due. One representation end to
// end (engine::Clock::time_point; max() = none), one rule for what a client
// or a router may send (a positive number of milliseconds from arrival, at
// most 1e9: the x-ladder-deadline-ms header and the prefill body's
// deadline_ms), and one way to pass it to the next hop: the milliseconds left
// now, which that hop anchors at its own arrival.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "engine/request_timings.h"

namespace ladder::server {

// A deadline in ms as sent: nullopt unless a positive number <= 1e9.
std::optional<double> parse_deadline_ms(std::string_view text);
bool valid_deadline_ms(double ms);
// `ms` after `from`.
engine::Clock::time_point deadline_after(engine::Clock::time_point from, double ms);
// The milliseconds left until `deadline` (at least 1: a deadline that passed
// in flight is the next hop's to refuse); nullopt when there is none.
std::optional<double> remaining_ms(engine::Clock::time_point deadline);

}  // namespace ladder::server
