#!/usr/bin/env bash
# Quality of KV eviction (--kv-evict window and snap) per slice against rung 1, as in
# docs/BENCHMARKS.md ("Rung 3: KV eviction"). The retrieval model
# (`ladder synth --preset retrieval`, context 4096): short chat,
# long-context and rare-evidence prompts filling 75% of the context and a
# needle at mid depth; a reference with every token's KV (f16,
# --save-reference), then each policy and budget replayed against it with
# --verify approx. Prints one table row per policy, budget and slice.
# Usage: bench/kv_evict_quality.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-kv-evict-quality}
LADDER="$BUILD_DIR/src/cli/ladder"
THREADS=${LADDER_BENCH_THREADS:-2}
REQUESTS=${KV_QUALITY_REQUESTS:-8}
BUDGETS=${KV_EVICT_BUDGETS:-"1024 2048 4096"}
POLICIES=${KV_EVICT_POLICIES:-"window snap"}
SINKS=${KV_EVICT_SINKS:-16}
mkdir -p "$OUT"

source "$(dirname "$0")/serve_helpers.sh"

if [[ ! -f "$OUT/retrieval.gguf" ]]; then
  "$LADDER" synth --preset retrieval -o "$OUT/retrieval.gguf" >/dev/null
fi
MODEL="$OUT/retrieval.gguf"

start_server "$OUT/serve-ref.log" -m "$MODEL" --served-model-name retrieval
wl="$OUT/workload.jsonl"
"$LADDER" workload chat --api completions --requests "$REQUESTS" --rate 50 --turns 1 --max-tokens 24 \
  --chat-system "" -o "$OUT/chat.jsonl" >/dev/null 2>&1
"$LADDER" workload long-context --requests "$REQUESTS" --rate 50 --fill 0.75 --endpoint "$URL" --max-tokens 24 \
  -o "$OUT/long.jsonl" >/dev/null 2>&1
"$LADDER" workload rare --requests "$REQUESTS" --rate 50 --fill 0.75 --endpoint "$URL" --max-tokens 24 \
  -o "$OUT/rare.jsonl" >/dev/null 2>&1
"$LADDER" workload needle --requests "$REQUESTS" --rate 50 --context-tokens 3000 --chars-per-token 1.5 \
  --max-tokens 24 -o "$OUT/needle.jsonl" >/dev/null 2>&1
cat "$OUT/chat.jsonl" "$OUT/long.jsonl" "$OUT/rare.jsonl" "$OUT/needle.jsonl" >"$wl"
"$LADDER" replay --endpoint "$URL" --workload "$wl" --out "$OUT/ref" --save-reference "$OUT/ref.json" \
  --quiet >/dev/null
stop_server

num() { if [[ "$1" == "-" ]]; then echo -; else printf %.2g "$1"; fi; }
row() { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$@"; }
row policy "budget (sinks $SINKS)" slice verified exact mean_match earliest_divergence "mean / max KL" task
for policy in $POLICIES; do
  for budget in $BUDGETS; do
    start_server "$OUT/serve-$policy-$budget.log" -m "$MODEL" --served-model-name retrieval \
      --kv-evict "$policy" --kv-budget "$budget" --kv-sinks "$SINKS"
    "$LADDER" replay --endpoint "$URL" --workload "$wl" --out "$OUT/$policy-$budget" \
      --reference "$OUT/ref.json" --verify approx --quiet >/dev/null || true
    stop_server
    jq -r --arg p "$policy" --arg b "$budget" '.runs[0].quality.per_slice[] |
      [$p, $b, .name, "\(.passed)/\(.requests)", "\(.exact)", .mean_match, (.earliest_divergence // "-"),
       (.mean_kl // "-"), (.max_kl // "-"),
       (if .task_checked > 0 then "\(.task_passed)/\(.task_checked)" else "-" end)] | @tsv' \
      "$OUT/$policy-$budget/record.json" | while IFS=$'\t' read -r p b s v ex mm ed kl kx task; do
      row "$p" "$b" "$s" "$v" "$ex" "$(printf %.3f "$mm")" "$ed" "$(num "$kl") / $(num "$kx")" "$task"
    done
  done
done
