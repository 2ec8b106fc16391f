// When each request is sent: the workload's own timestamps (optionally
// scaled), or arrivals re-drawn at a chosen rate from a Poisson, constant or
// gamma process; then a window (--duration / --requests). Only "arrival
// units" are timed: independent requests and the first turn of each session;
// later turns are closed-loop and follow their previous turn.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/workload.h"

namespace ladder::harness {

struct ArrivalProcess {
  enum class Kind { kPoisson, kConstant, kGamma };
  Kind kind = Kind::kPoisson;
  double cv = 1.0;  // coefficient of variation of inter-arrival gaps (gamma)

  std::string to_string() const;
};

// "poisson" | "constant" | "gamma:CV" (CV > 0).
Result<ArrivalProcess> parse_arrival(const std::string& text);

// n arrival times at `rate` per second, starting at 0 (the first gap is drawn
// too, except for constant arrivals which start at 0). Deterministic in seed.
std::vector<double> arrival_times(size_t n, double rate, const ArrivalProcess& process, uint64_t seed);

struct ScheduleOptions {
  double time_scale = 1.0;        // multiplies the workload's timestamps (0.5 = twice as fast)
  std::optional<double> rate;     // requests (arrival units) per second; replaces timestamps
  ArrivalProcess arrival;
  uint64_t seed = 1;
  std::optional<double> duration_s;   // keep units arriving before this time
  std::optional<int64_t> max_requests;  // keep the first N requests (in arrival order)
};

// Re-times and windows w.requests in place, sorts them by arrival (sessions'
// turns in order after their first), and appends notes on what was done.
Status apply_schedule(Workload& w, const ScheduleOptions& opts);

// Time span of the open-loop arrivals (last unit's t), for an offered rate.
double arrival_span_s(const std::vector<WorkloadRequest>& requests);
// Number of arrival units (independent requests + sessions).
size_t arrival_unit_count(const std::vector<WorkloadRequest>& requests);

}  // namespace ladder::harness
