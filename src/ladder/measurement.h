// One `ladder replay` of one workload against one configuration, as the
// climb reads it back: the record (record.json) and, per request, whether it
// was good and verified under the policy's margins (requests.jsonl).
//
// Verification is the harness's (the replay checked every request against
// the rung-1 reference). In a replay run in approx mode because some slice is
// approximate, a request of a slice the policy verifies exactly also needs
// the reference's exact token sequence (quality.exact_match).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ladder/gate.h"
#include "ladder/policy.h"

namespace ladder::climb {

struct RequestOutcome {
  std::string key;
  std::string slice;
  bool compared = false;  // the replay checked it against the reference
  bool verified = false;  // under the policy (see the file comment)
  bool good = false;      // verified and within every SLO
  bool answered = false;  // HTTP 200 without an error event
  std::string error;      // the first words of what went wrong: "HTTP 400 context_length_exceeded: ..."
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;  // none for a single output token
  double e2e_ms = 0;
};

struct Measurement {
  std::string workload;
  int repeat = 0;    // 1-based; 0 for the reference run
  int position = 0;  // 1-based place in its comparison's sequence of replays (the A B B A order)
  std::string side;  // "A" (serving now), "B" (candidate) or "reference"
  int rung = 0;
  std::string rung_name;
  std::string dir;    // the replay's --out
  int exit_code = 0;  // the replay's: 0, or 2 (measured, with errors or nothing verified)
  nlohmann::json record;
  std::vector<RequestOutcome> requests;  // in schedule order

  size_t good() const;
  size_t verified() const;
  double window_s() const;
  std::optional<double> server_core_s() const;
  std::string fingerprint() const;  // configuration.fingerprint_sha256
};

// Reads DIR/record.json and DIR/requests.jsonl.
Result<Measurement> read_measurement(const std::string& dir, const ClimbPolicy& policy);

// The A and B replays of one workload and repeat, paired by request key (a
// request only one side has is left out: it cannot be paired).
PairedRepeat pair_by_key(const Measurement& a, const Measurement& b);

// Per slice, over the measurements (a configuration's own runs), with the
// policy's margins; in slice-name order.
std::vector<SliceQuality> slice_quality(const std::vector<const Measurement*>& runs,
                                        const ClimbPolicy& policy);

// What the report and the ledger say about a configuration's own runs.
struct RungFigures {
  size_t requests = 0;
  size_t good = 0;
  size_t verified = 0;
  double goodput_rps = 0;  // good / the sum of the runs' windows
  FractionInterval goodput_fraction;
  std::optional<double> server_core_s;
  std::optional<double> core_s_per_verified;  // cost per verified task
  // Speculative decoding, when the server's usage reports it (harness
  // stats.h): accepted / proposed draft tokens, and tokens per verify cycle.
  std::optional<double> accepted_rate;
  std::optional<double> tokens_per_cycle;
  nlohmann::json ttft_ms;  // {"p50", "p90", "p95", "p99"} (null when none)
  nlohmann::json tpot_ms;
  nlohmann::json e2e_ms;
};
RungFigures rung_figures(const std::vector<const Measurement*>& runs, const ClimbPolicy& policy);
nlohmann::json to_json(const RungFigures& f);

}  // namespace ladder::climb
