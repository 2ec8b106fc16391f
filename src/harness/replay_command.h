// `ladder replay` end to end: load + scale + schedule the workload, replay it
// once or at each sweep rate, and write record.json, requests.jsonl and
// report.html into the output directory; the summary table goes to stdout,
// progress to stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/replay.h"
#include "harness/schedule.h"
#include "harness/trace_formats.h"

namespace ladder::harness {

struct ReplayCommandOptions {
  std::string endpoint;
  std::string api_key;
  std::vector<std::string> tenant_keys;  // "TENANT=KEY"
  std::string workload_path;
  std::string format = "auto";
  bool strict = false;
  double time_scale = 1.0;
  std::optional<double> rate;
  std::string arrival = "poisson";
  uint64_t seed = 1;
  std::string sweep;  // "R1,R2,..."
  double target = 0.9;
  std::optional<double> duration_s;
  std::optional<int64_t> max_requests;
  std::string slo;  // "ttft_ms=..,tpot_ms=..,e2e_ms=.."
  int64_t max_input_tokens = 0;
  int64_t max_output_tokens = 0;
  double length_scale = 1.0;
  double chars_per_token = 4.0;
  std::string text_path;  // corpus for synthesized prompts
  int concurrency = 0;
  std::string model;
  double timeout_s = 300;
  double wait_ready_s = 120;  // wait for /health before the first request
  bool ignore_eos = false;
  bool quiet = false;  // no progress lines
  std::string out_dir;
  std::string command_line;  // recorded as given
};

// "ttft_ms=500,tpot_ms=50,e2e_ms=4000" (any subset) -> Slo.
Result<Slo> parse_slo(const std::string& text);
// "1,2.5,4" -> ascending positive rates.
Result<std::vector<double>> parse_rates(const std::string& text);

// Returns the process exit code it wants: 0 on success. Errors are returned
// as a Status (bad flags, unreadable workload, unreachable output directory).
Status run_replay_command(const ReplayCommandOptions& opts);

}  // namespace ladder::harness
