#!/usr/bin/env bash
# Rung 3 where memory, not compute, limits concurrency: long prompts (75% of
# the retrieval model's 4,096-token context, ~3,070 tokens each, and the Azure
# code trace's, capped at 1,300 of its tokens, up to ~2,900 of this model's)
# in a KV pool
# bounded to CLIMB_KV_MIB (default 8 MiB: two such prompts in f16), climbed
# with `ladder climb`: rung 1 is f16 KV in that memory, the candidates q8 and
# q4 KV in the same memory (about 1.9x and 3.6x the blocks) and f16 with a
# host tier beside it (--kv-host-mib). Every slice is verified by the
# harness's approximate thresholds against rung 1's own outputs; the gate
# promotes a candidate only where goodput rises and every slice stays inside
# its margin, and the ledger says with numbers why not otherwise.
# Usage: bench/climb_kv_memory.sh [BUILD_DIR] [OUT_DIR]   (LADDER_BIN overrides BUILD_DIR/src/cli/ladder)
#   CLIMB_KV_MIB (default 8), CLIMB_KV_REQUESTS (default 12), CLIMB_KV_RATE (requests/s, default 4),
#   CLIMB_KV_E2E_MS (default 10000), CLIMB_KV_HOST_MIB (default 64)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-climb-kv-memory}
LADDER=${LADDER_BIN:-$BUILD_DIR/src/cli/ladder}
THREADS=${LADDER_BENCH_THREADS:-2}
MIB=${CLIMB_KV_MIB:-8}
REQUESTS=${CLIMB_KV_REQUESTS:-12}
RATE=${CLIMB_KV_RATE:-4}
E2E_MS=${CLIMB_KV_E2E_MS:-10000}
HOST_MIB=${CLIMB_KV_HOST_MIB:-64}
SHARED=${LADDER_SHARED_DIR:-../shared}
SHARED=$(cd "$SHARED" && pwd)
mkdir -p "$OUT"
rm -rf "$OUT/ledger.jsonl" "$OUT/climb"

# shellcheck source=bench/serve_helpers.sh
source "$(dirname "$0")/serve_helpers.sh"

MODEL="$OUT/retrieval.gguf"
[ -f "$MODEL" ] || "$LADDER" --log-level warn synth --preset retrieval -o "$MODEL" >/dev/null
# The prompts are sized in the served model's own tokens (--endpoint).
start_server "$OUT/serve-size.log" -m "$MODEL"
"$LADDER" workload long-context --requests "$REQUESTS" --rate "$RATE" --fill 0.75 --endpoint "$URL" \
  --max-tokens 16 -o "$OUT/long.jsonl" >/dev/null 2>&1
stop_server

cat >"$OUT/policy.toml" <<POLICY
# bench/climb_kv_memory.sh
min_repeats = 4
max_repeats = 8
warmup_requests = 1
[slo]
e2e_ms = $E2E_MS
[quality]
verify = "approx"
margin = 0.9
[[workload]]
name = "long"
path = "$OUT/long.jsonl"
[[workload]]
name = "azure-code"
path = "$SHARED/traces/AzureLLMInferenceTrace_code.csv"
args = ["--requests", "12", "--max-input-tokens", "1300", "--max-output-tokens", "16", "--rate", "$RATE"]
[[rung]]
name = "f16-${MIB}mib"
args = ["-t", "$THREADS", "--kv-memory-mib", "$MIB"]
[[rung]]
name = "q8-${MIB}mib"
args = ["-t", "$THREADS", "--kv-memory-mib", "$MIB", "--kv-dtype", "q8"]
[[rung]]
name = "q4-${MIB}mib"
args = ["-t", "$THREADS", "--kv-memory-mib", "$MIB", "--kv-dtype", "q4"]
[[rung]]
name = "f16-${MIB}mib-host${HOST_MIB}"
args = ["-t", "$THREADS", "--kv-memory-mib", "$MIB", "--kv-host-mib", "$HOST_MIB"]
POLICY

"$LADDER" climb --policy "$OUT/policy.toml" -m "$MODEL" --out "$OUT/climb" --ledger "$OUT/ledger.jsonl" \
  >"$OUT/climb.out" 2>"$OUT/climb.log" || { tail -n 20 "$OUT/climb.log" >&2; exit 1; }
cat "$OUT/climb.out"
echo
"$LADDER" ledger show "$OUT/ledger.jsonl"
