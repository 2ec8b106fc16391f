// report.html: one self-contained page (no network: data and drawing code are
// inline). Tables: the SLOs per slice, the units and the verification mode
// (with the reference's fingerprint); per run the outcomes (good, late,
// unverified, rejected early, expired, errors), latency percentiles with
// verified-completion latency, quality against the reference per slice and
// per tenant (worst first), speculative decoding, cost per verified task, and
// every request not served with its HTTP status, code and message; the max
// goodput rate as the sweep found it ("not reached below X" when every rate
// met the target). Charts drawn on <canvas>:
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

// Text for HTML element content and attribute values: & < > " escaped.
std::string html_escape(const std::string& s);

// record: the record.json contents (shown as tables); runs: the measured data.
std::string make_report_html(const nlohmann::json& record, const std::vector<RunReport>& runs);

}  // namespace ladder::harness
