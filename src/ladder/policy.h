// The climb policy (TOML): what `ladder climb` measures, how it judges, and
// which configurations it tries, in order.
//
//   confidence = 0.95         # the gate's nominal two-sided level: a false promotion at most (1 - c) / 2
//   min_repeats = 4           # paired runs per workload at the first look (A B B A blocks: even)
//   max_repeats = 32          # ... at the last; looks double in between (sequential.h)
//   # repeats = 2             # instead: exactly this many, one look
//   max_compare_s = 0         # time budget of one comparison (0: none); the gate then looks once more
//   max_reference_errors = 0.05  # rung 1 may fail at most this fraction of the reference requests
//   min_slice_requests = 4    # ... and must serve at least this many of every workload's slice
//   seed = 1                  # the replays' arrival seed
//   warmup_requests = 4       # completions sent to each server before measuring
//   min_gain = 0.0            # the interval's lower bound must exceed this
//                             # (relative goodput change; 0 = "higher beyond the noise")
//   loads = [0.5, 1, 2]       # offered-load multipliers (default [1]): each load
//                             # climbs the rungs on its own and is decided on its own
//   [slo]                     # replaces every request's SLO, field by field
//   ttft_ms = 500
//   tpot_ms = 60
//   e2e_ms = 3000
//   [quality]
//   verify = "exact"          # every slice: "exact" or "approx"
//   margin = 1.0              # least fraction of a slice's compared requests that must verify
//   [quality.default]         # approx thresholds, as `ladder replay --policy` reads them
//   min_match = 0.9
//   [quality.slice.long_context]
//   verify = "approx"         # this slice only
//   margin = 0.95
//   min_match = 0.8           # ... and any threshold of docs/REPLAY.md
//   [[workload]]              # one or more; at least one real trace
//   name = "mooncake"
//   path = "../shared/traces/mooncake_conversation_trace.jsonl"
//   args = ["--requests", "16", "--length-scale", "0.01", "--rate", "4"]   # any `ladder replay` options
//   [[rung]]                  # rung 1 first: the floor and the reference
//   name = "dense"
//   args = []                 # any `ladder serve` options
//   [[rung]]
//   name = "chunked"
//   args = ["--max-chunk-tokens", "16"]
//   model = "other.gguf"      # optional: serve another model file (a requantized one, say)
//   [[rung]]
//   name = "split"
//   topology = "disagg"       # rung 2: `serve --role prefill`, `serve --role decode`
//   args = ["-t", "1"]        # and `ladder route` in front; args go to both workers,
//   prefill_args = []         # these to one of them or to the router
//   decode_args = []
//   route_args = []
//
// Relative paths are taken from the policy file's folder. The approx
// thresholds are parsed by the harness's own verify policy reader
// (harness/verify_policy.h), so they mean exactly what `ladder replay
// --verify approx --policy` makes of them.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "harness/quality.h"
#include "harness/verify_policy.h"
#include "harness/workload.h"
#include "ladder/sequential.h"

namespace ladder::climb {

// A slice's quality margin: how it is verified and how much of it must pass.
struct SliceMargin {
  harness::VerifyMode verify = harness::VerifyMode::kExact;
  double margin = 1.0;  // least verified fraction of the compared requests
};

struct WorkloadSpec {
  std::string name;
  std::string path;               // resolved against the policy's folder
  std::vector<std::string> args;  // `ladder replay` options
};

// How a rung is served: one `ladder serve` process, or rung 2's split of a
// prefill worker, a decode worker and the router in front of them.
enum class Topology { kSingle, kDisagg };
const char* topology_name(Topology t);  // "single" | "disagg"

struct RungSpec {
  std::string name;
  std::vector<std::string> args;  // `ladder serve` options (disagg: both workers')
  std::string model;              // empty: the climb's --model
  Topology topology = Topology::kSingle;
  // disagg only: the prefill worker's, the decode worker's and the router's own options.
  std::vector<std::string> prefill_args;
  std::vector<std::string> decode_args;
  std::vector<std::string> route_args;
};

struct ClimbPolicy {
  std::string source;         // the file
  std::string digest_sha256;  // of its bytes
  double confidence = 0.95;
  int min_repeats = 4;
  int max_repeats = 32;
  double max_compare_s = 0;
  double max_reference_errors = 0.05;
  int min_slice_requests = 4;
  uint64_t seed = 1;
  int warmup_requests = 4;
  double min_gain = 0.0;
  harness::Slo slo;
  SliceMargin default_margin;
  std::map<std::string, SliceMargin> slice_margins;
  harness::VerifyPolicy thresholds;  // approx thresholds per slice (the harness's reader)
  std::vector<WorkloadSpec> workloads;
  std::vector<RungSpec> rungs;
  // Offered-load multipliers, ascending, distinct; [1] unless the policy sets them.
  std::vector<double> loads{1.0};

  SliceMargin margin_for(const std::string& slice) const;
  // The sequential comparison's looks and error rate.
  SequentialPlan plan() const;
  // Whether progress, verdicts and reports name the load: several loads, or
  // one other than the workloads' own.
  bool loads_named() const { return loads.size() > 1 || loads.front() != 1.0; }
  // exact when every slice is verified exactly, else approx.
  harness::VerifyMode replay_mode() const;
  // The harness verify policy file for `ladder replay --policy` (approx mode).
  std::string thresholds_toml() const;
  nlohmann::json to_json() const;
};

// Parses a policy; an unknown key, a wrong type, a value out of range, a
// replay or serve option the climb sets itself, or a missing workload or rung
// is an error that names the key (and the table it is in).
Result<ClimbPolicy> parse_climb_policy(const std::string& toml_text, const std::string& source,
                                       const std::string& base_dir);
Result<ClimbPolicy> load_climb_policy(const std::string& path);

// A workload's replay options at offered load `load` (a multiplier of the
// traffic the options describe): a re-drawn rate (--rate R) becomes R x load;
// otherwise the arrival times are compressed, --time-scale T becoming
// T / load (T = 1 when absent). Load 1 returns the options unchanged. An
// unreadable --rate or --time-scale value is an error naming it.
Result<std::vector<std::string>> workload_args_at_load(const std::vector<std::string>& args, double load);

// "1x", "0.5x", "2x": how reports and progress lines name a load.
std::string load_label(double load);

// "--slo" value for a replay: "ttft_ms=500,e2e_ms=3000"; empty when none.
std::string slo_argument(const harness::Slo& slo);

}  // namespace ladder::climb
