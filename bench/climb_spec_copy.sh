#!/usr/bin/env bash
# Speculation where it wins: n-gram (prompt lookup) drafts on copy requests
# (`ladder workload copy`) on a model of realistic per-token cost (the 110m
# synthetic model, Q8_0: ~4.5 ms a token at batch 1 on 2 cores), climbed at
# a low and a high offered load under a TPOT SLO that plain decoding misses
# at batch 1: 0.85 x plain decoding's time per token on this machine,
# measured first (`ladder bench spec` on a copy prompt), so the SLO follows
# the machine. Prints the verdict and the ledger (one decision per load).
# The model's weights are random, so it does not copy the passage: its
# drafts are accepted where its output repeats itself or the prompt; the
# copy requests carry no expectation here (it could never meet one).
# Usage: bench/climb_spec_copy.sh [BUILD_DIR] [OUT_DIR]   (LADDER_BIN overrides BUILD_DIR/src/cli/ladder)
#   CLIMB_COPY_LOADS (default "1, 64"), CLIMB_COPY_SLO_TPOT_MS (default: measured, above)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-climb-spec-copy}
LADDER=${LADDER_BIN:-$BUILD_DIR/src/cli/ladder}
SHARED=${LADDER_SHARED_DIR:-../shared}
SHARED=$(cd "$SHARED" && pwd)
LOADS=${CLIMB_COPY_LOADS:-"1, 64"}
mkdir -p "$OUT"
rm -rf "$OUT/ledger.jsonl" "$OUT/climb"

MODEL="$OUT/m110-q8.gguf"
[ -f "$MODEL" ] || "$LADDER" --log-level warn synth --preset 110m --dtype q8_0 -o "$MODEL" >/dev/null
"$LADDER" workload copy --api completions --context-tokens 200 --max-tokens 64 --requests 16 --rate 1 \
  -o "$OUT/copy-with-expect.jsonl" 2>/dev/null
jq -c 'del(.expect)' "$OUT/copy-with-expect.jsonl" >"$OUT/copy.jsonl"

# Plain and speculative decoding at batch 1 on the first copy prompt: tokens per second.
read -r PLAIN SPEC < <("$LADDER" --log-level warn bench spec -m "$MODEL" --spec ngram --batch 1 --repeats 2 --output 32 \
  -p "$(jq -r .prompt "$OUT/copy.jsonl" | head -n 1)" | awk '$1 == "1" {print $2, $3; exit}')
TPOT=${CLIMB_COPY_SLO_TPOT_MS:-$(awk -v p="$PLAIN" 'BEGIN {printf "%.2f", 0.85 * 1000 / p}')}
echo "batch 1 on a copy prompt: plain $PLAIN tok/s, n-gram speculation $SPEC tok/s; SLO: TPOT $TPOT ms, E2E 5 s"

cat >"$OUT/policy.toml" <<POLICY
# bench/climb_spec_copy.sh
min_repeats = 4
max_repeats = 8
warmup_requests = 2
loads = [$LOADS]
[slo]
tpot_ms = $TPOT
e2e_ms = 5000
[quality]
verify = "exact"
margin = 1.0
[[workload]]
name = "copy"
path = "$OUT/copy.jsonl"
[[workload]]
name = "mooncake"
path = "$SHARED/traces/mooncake_conversation_trace.jsonl"
args = ["--requests", "12", "--length-scale", "0.05", "--max-input-tokens", "64", "--max-output-tokens", "48", "--rate", "1"]
[[rung]]
name = "plain"
args = ["-t", "2"]
[[rung]]
name = "spec-ngram"
args = ["-t", "2", "--spec", "ngram", "--spec-k", "4"]
POLICY

# shellcheck source=bench/climb_lib.sh
source "$(dirname "$0")/climb_lib.sh"
run_climb_and_report
