#!/usr/bin/env bash
# Goodput on a long-context workload, rung 1 (f16 KV) against rung 3
# (`serve --rung 3`: q4 KV), both in the same KV memory, paired in one run.
# The retrieval model (context 4096) serves prompts filling 75% of its
# context; a rung-1 reference with ample memory decides what is verified
# (rung 1: exact tokens; rung 3: the approximate thresholds, per slice).
# Usage: bench/kv_goodput.sh [BUILD_DIR] [OUT_DIR]
# Knobs: KV_GOODPUT_MIB (KV memory, default 8), KV_GOODPUT_RATE (requests/s,
# default 4), KV_GOODPUT_REQUESTS (default 16), KV_GOODPUT_E2E_MS (default 10000).
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-kv-goodput}
LADDER="$BUILD_DIR/src/cli/ladder"
THREADS=${LADDER_BENCH_THREADS:-2}
MIB=${KV_GOODPUT_MIB:-8}
RATE=${KV_GOODPUT_RATE:-4}
REQUESTS=${KV_GOODPUT_REQUESTS:-16}
E2E_MS=${KV_GOODPUT_E2E_MS:-10000}
mkdir -p "$OUT"

source "$(dirname "$0")/serve_helpers.sh"

# serve NAME ARGS...: starts a server on the retrieval model, sets URL.
serve() {
  local name="$1"
  shift
  start_server "$OUT/serve-$name.log" -m "$OUT/retrieval.gguf" --served-model-name retrieval "$@"
}

if [[ ! -f "$OUT/retrieval.gguf" ]]; then
  "$LADDER" synth --preset retrieval -o "$OUT/retrieval.gguf" >/dev/null
fi
serve reference --kv-dtype f16
"$LADDER" workload long-context --requests "$REQUESTS" --rate "$RATE" --fill 0.75 --endpoint "$URL" --max-tokens 16 \
  --slo "e2e_ms=$E2E_MS" -o "$OUT/long.jsonl" >/dev/null 2>&1
"$LADDER" replay --endpoint "$URL" --workload "$OUT/long.jsonl" --out "$OUT/reference" \
  --save-reference "$OUT/ref.json" --quiet >/dev/null
stop_server

printf "| configuration | KV blocks | verified | SLO met | good | goodput (req/s) | goodput fraction | e2e p50 (ms) | e2e p90 (ms) |\n"
for run in "rung1:--kv-dtype f16:exact" "rung3:--rung 3:approx"; do
  IFS=: read -r name args verify <<<"$run"
  # shellcheck disable=SC2086  # args are two words on purpose
  serve "$name" $args --kv-memory-mib "$MIB"
  blocks=$(curl -s "$URL/v1/models" | jq -r '.data[0].ladder.config.kv_blocks')
  format=$(curl -s "$URL/v1/models" | jq -r '.data[0].ladder.config.kv_format')
  "$LADDER" replay --endpoint "$URL" --workload "$OUT/long.jsonl" --out "$OUT/$name" \
    --reference "$OUT/ref.json" --verify "$verify" --quiet >/dev/null || true
  stop_server
  jq -r --arg n "$name ($format, $MIB MiB)" --arg b "$blocks" '.runs[0].summary.overall |
    "| \($n) | \($b) | \(.verified)/\(.requests) | \(.slo_met) | \(.good) | \(.goodput_rps * 1000 | round / 1000) | \(.goodput_fraction * 1000 | round / 1000) | \(.e2e_ms.p50 // "-" | if type == "number" then round else . end) | \(.e2e_ms.p90 // "-" | if type == "number" then round else . end) |"' \
    "$OUT/$name/record.json"
done
