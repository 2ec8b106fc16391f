// `ladder climb`: the ladder's decision loop.
//
//  1. Start rung 1 (`ladder serve`, this binary, on a free loopback port),
//     warm it up, and replay every workload once with --save-reference: the
//     rung-1 reference every later replay is verified against.
//     A reference that rung 1 failed to answer (more than
//     max_reference_errors of its requests, or fewer than
//     min_slice_requests of some workload's slice) stops the climb.
//  2. For each candidate rung in order: start it (its serve arguments, its
//     model file if it names one), warm it up, and replay every workload
//     against the configuration serving now (A) and the candidate (B) in
//     blocks of A B B A and B A A B, the same seeds on both sides, until the
//     sequential gate decides (sequential.h).
//  3. The gate (gate.h) judges the run-level goodput change and checks every
//     slice's verified fraction against its margin. Promoted:
//     the candidate serves from now on and the next candidate is paired with
//     it. Rejected, or failed to start: serving stays where it was, one rung
//     lower than the candidate.
//  4. Every tested configuration gets a ledger line (ledger.h) as soon as it
//     is decided; the side-by-side report is written at the end.
//
// Loads: with policy `loads` (multipliers of the workloads' offered load,
// policy.h workload_args_at_load), steps 2-3 run once per load, each from
// rung 1 (restarted), so every load gets its own sequence of decisions --
// a candidate can be rejected at one load and promoted at another. The
// rung-1 reference is made once, with the workloads as written: a
// request's reference outputs do not depend on when it arrives.
//
// Progress goes to stderr, one line per replay and per decision.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ladder/calibration.h"
#include "ladder/gate.h"
#include "ladder/measurement.h"
#include "ladder/policy.h"

namespace ladder::climb {

struct ClimbOptions {
  std::string policy_path;
  std::string model;        // rung 1's model file (and every rung's without a model key)
  std::string out_dir;      // default "climb-out"
  std::string ledger_path;  // default OUT/ledger.jsonl
  std::string binary;       // the ladder binary to start; default this process's
  double ready_timeout_s = 180;
  // > 0: instead of climbing, compare rung 1 with a copy of itself this many
  // times and record how often the gate was fooled (calibration.h).
  int calibrate = 0;
};

// What happened to one rung.
struct RungOutcome {
  int rung = 0;  // 1-based position in the policy
  double load = 1.0;
  RungSpec spec;
  std::string model;     // the file it served
  std::string decision;  // baseline | promoted | rejected | failed
  std::string reason;
  int compared_with = 0;                   // the rung it was paired with (0 for rung 1)
  int serving_after = 1;                   // the rung serving once this one was decided
  std::optional<GoodputInterval> goodput;  // the paired change against compared_with
  std::string order;                       // per paired run, which side ran first: "ABBA..."
  std::vector<SliceQuality> quality;       // its own runs against the reference
  std::optional<RungFigures> figures;      // its own runs
  std::vector<Measurement>
      own;  // B runs (rung 1: its A runs of the first comparison, else the reference runs)
  std::vector<Measurement> paired;  // the A runs it was paired with
  nlohmann::json fingerprint;
};

// The rungs climbed at one offered load.
struct LoadClimb {
  double load = 1.0;
  std::vector<RungOutcome> rungs;
  int serving = 1;  // the rung serving at this load once the climb is done
};

struct ClimbResult {
  std::string climb_id;
  ClimbPolicy policy;
  std::vector<LoadClimb> loads;  // in the policy's (ascending) order
  std::string ledger_path;
  std::string report_path;
  nlohmann::json machine;
  std::optional<CalibrationSummary> calibration;  // --calibrate's result (then `loads` is empty)
};

// Fails (a Status) for a bad policy, a rung 1 that does not start, a
// reference that cannot be made, or workloads without a real trace; a
// candidate that does not start is a "failed" decision, not an error.
Result<ClimbResult> run_climb(const ClimbOptions& opts);

// The verdict line that opens `ladder climb`'s output and `make demo`:
// "verdict: serving rung 2 'chunked' (promoted: goodput +12.0% CI [...])";
// with several loads, one clause per load: "verdict: at load 0.5x serving
// rung 1 'dense' (...); at load 2x serving rung 2 'spec' (...)".
std::string verdict_line(const ClimbResult& r);

}  // namespace ladder::climb
