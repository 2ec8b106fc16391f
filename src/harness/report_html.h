// report.html: one self-contained page (no network: data and drawing code are
// inline) with the replay's tables and charts drawn on <canvas>:
//   latency CDFs (TTFT, TPOT, E2E; one line per run),
//   goodput and SLO attainment vs offered rate (the sweep),
//   per run, a timeline of TTFT at send time with requests in flight and the
//   server's queue depth (when its /metrics exports one).
// After drawing, the page writes into <pre id="selfcheck"> how many coloured
// (data) pixels each chart's plot area holds, and script errors into
// <pre id="errors">, so a headless browser can check that it rendered.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/record.h"

namespace ladder::harness {

// record: the record.json contents (shown as tables); runs: the measured data.
std::string make_report_html(const nlohmann::json& record, const std::vector<RunReport>& runs);

}  // namespace ladder::harness
