// `ladder replay` end to end: load + scale + schedule the workload, replay it
// once, at each sweep rate, or by an automatic sweep, and write record.json,
// requests.jsonl and report.html into the output directory; the summary
// table goes to stdout, progress to stderr.
//
// With --save-reference REF the run's outputs (token ids, text, finish
// reason, top-5 logprobs per position) become a reference (reference.h);
// with --reference REF --verify exact|approx every request is checked
// against one, and only requests that pass count as verified.
//
// Honest exits: an option that cannot apply to this workload or mode is an
// error, never a silent no-op; the command fails (kExitRunFailed) when any
// request errored (unless allow_errors) or when no request verified, after
// writing everything it measured.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/replay.h"
#include "harness/schedule.h"
#include "harness/trace_formats.h"

namespace ladder::harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 2;  // measured and written, but errors (without --allow-errors) or none verified

struct ReplayCommandOptions {
  std::string endpoint;
  std::string api_key;
  std::vector<std::string> tenant_keys;  // "TENANT=KEY"
  bool insecure = false;                 // TLS without certificate checks
  std::string ca_cert;                   // PEM CAs to trust besides the system store
  std::string workload_path;
  std::string format = "auto";
  bool strict = false;
  double time_scale = 1.0;
  std::optional<double> rate;
  std::string arrival = "poisson";
  uint64_t seed = 1;
  std::string sweep;  // "R1,R2,..." or "auto"
  double target = 0.9;
  int sweep_steps = 3;           // --sweep auto: bisection steps
  double sweep_max_rate = 1000;  // --sweep auto: doubling ceiling
  std::optional<double> duration_s;
  std::optional<int64_t> max_requests;
  std::string slo;  // "ttft_ms=..,tpot_ms=..,e2e_ms=.."
  bool send_deadlines = true;
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

  std::string save_reference;  // write a reference here
  std::string reference;       // check against this reference
  std::string verify;          // exact | approx (default exact with --reference)
  std::string policy_path;     // approx thresholds per slice (TOML)
  QualityThresholds threshold_flags;  // override the policy's [default]
  std::string token_ids = "auto";     // auto | on | off: ask for output token ids
  bool allow_errors = false;
  std::optional<double> price_in;   // per million input tokens
  std::optional<double> price_out;  // per million output tokens

  std::string out_dir;
  std::string command_line;  // recorded as given
  // Long names of the options the user gave (without "--"): options that
  // have defaults are only "given" when set explicitly, which is what the
  // cannot-apply checks need.
  std::set<std::string> given;
};

// "ttft_ms=500,tpot_ms=50,e2e_ms=4000" (any subset) -> Slo.
Result<Slo> parse_slo(const std::string& text);
// "1,2.5,4" -> ascending positive rates.
Result<std::vector<double>> parse_rates(const std::string& text);

// A Status for what stops the command before or while measuring (bad flags,
// an unreadable workload or reference, an unreachable server); otherwise the
// exit code: kExitOk, or kExitRunFailed with the reason printed on stderr.
Result<int> run_replay_command(const ReplayCommandOptions& opts);

}  // namespace ladder::harness
