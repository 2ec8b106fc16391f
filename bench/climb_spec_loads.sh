#!/usr/bin/env bash
# The seed's speculative example as a climb over offered loads, as in
# docs/BENCHMARKS.md ("Climb: speculative decoding per load"): rung 1 plain
# decoding, rung 2 speculative decoding forced on (--spec-fixed, k = 4) with
# a draft right about 70-80% of the time (self-q4: the model requantized to
# Q4_0; 3.4-4.2 tokens per verify cycle), each load climbed on its own and
# decided by paired goodput under a TPOT SLO. Prints the verdict and the
# ledger (one decision per load).
# Usage: bench/climb_spec_loads.sh [BUILD_DIR] [OUT_DIR]
#   CLIMB_SPEC_MODEL (default ../shared/models/stories260K.gguf), CLIMB_SPEC_LOADS (default "0.25, 1, 4"),
#   CLIMB_SPEC_DRAFT (default self-q4), CLIMB_SPEC_SLO_TPOT_MS (default 4),
#   CLIMB_SPEC_MIN_REPEATS / CLIMB_SPEC_MAX_REPEATS (default 4 / 16: the sequential gate's first and last look)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-climb-spec-loads}
LADDER="$BUILD_DIR/src/cli/ladder"
SHARED=${LADDER_SHARED_DIR:-../shared}
SHARED=$(cd "$SHARED" && pwd)
MODEL=${CLIMB_SPEC_MODEL:-$SHARED/models/stories260K.gguf}
LOADS=${CLIMB_SPEC_LOADS:-"0.25, 1, 4"}
DRAFT=${CLIMB_SPEC_DRAFT:-self-q4}
TPOT=${CLIMB_SPEC_SLO_TPOT_MS:-4}
MIN_REPEATS=${CLIMB_SPEC_MIN_REPEATS:-4}
MAX_REPEATS=${CLIMB_SPEC_MAX_REPEATS:-16}
mkdir -p "$OUT"
rm -f "$OUT/ledger.jsonl"

cat >"$OUT/policy.toml" <<EOF
# bench/climb_spec_loads.sh
min_repeats = $MIN_REPEATS
max_repeats = $MAX_REPEATS
warmup_requests = 4
loads = [$LOADS]
[slo]
tpot_ms = $TPOT
e2e_ms = 5000
[quality]
verify = "exact"
margin = 1.0
[[workload]]
name = "mooncake"
path = "$SHARED/traces/mooncake_conversation_trace.jsonl"
args = ["--requests", "24", "--length-scale", "0.05", "--max-input-tokens", "32", "--max-output-tokens", "48", "--rate", "8"]
[[rung]]
name = "plain"
args = ["-t", "2"]
[[rung]]
name = "spec-$DRAFT"
args = ["-t", "2", "--spec", "$DRAFT", "--spec-k", "4", "--spec-fixed"]
EOF

# shellcheck source=bench/climb_lib.sh
source "$(dirname "$0")/climb_lib.sh"
run_climb_and_report
