// The terminal summary of a replay: per run, the outcome counts (good, late,
// unverified, rejected early, expired, errors), the latency percentiles
// (verified-completion latency apart), quality against the reference per
// slice and per tenant (worst first), speculative decoding, cost per
// verified task, and every failure with its HTTP status and message; the
// SLOs and units once.
#pragma once

#include <string>
#include <vector>

#include "harness/record.h"

namespace ladder::harness {

std::string format_summary_table(const std::vector<RunReport>& runs);

}  // namespace ladder::harness
