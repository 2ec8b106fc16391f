#!/usr/bin/env bash
# Quality of the approximate KV formats per slice against rung 1, as in
# docs/BENCHMARKS.md ("Rung 3: approximate KV"). For stories260K (context 512)
# and the retrieval model (`ladder synth --preset retrieval`, context 4096):
# one workload of four slices (short chat, long-context and rare-evidence
# prompts filling 75% of the context, a needle at mid depth), a rung-1
# reference (f16 KV, --save-reference), then every format replayed against it
# with --verify approx. Prints one table row per model, format and slice.
# Usage: bench/kv_quality.sh [BUILD_DIR] [OUT_DIR]
#   KV_QUALITY_REQUESTS (8 per slice), KV_QUALITY_FORMATS ("f32 q8 q4"),
#   KV_QUALITY_FILL (0.75; more requests need a lower one to fit stories260K's
#   128-token context with room for the output)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-kv-quality}
LADDER="$BUILD_DIR/src/cli/ladder"
SHARED=${LADDER_SHARED_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared}
THREADS=${LADDER_BENCH_THREADS:-2}
REQUESTS=${KV_QUALITY_REQUESTS:-8}
FORMATS=${KV_QUALITY_FORMATS:-"f32 q8 q4"}
FILL=${KV_QUALITY_FILL:-0.75}  # long-context and rare prompts: this share of the context
mkdir -p "$OUT"

source "$(dirname "$0")/serve_helpers.sh"

# serve MODEL NAME FORMAT: starts a server, sets URL.
serve() { start_server "$OUT/serve-$2-$3.log" -m "$1" --served-model-name "$2" --kv-dtype "$3"; }

# workload NAME URL NEEDLE_TOKENS: the four slices in one file.
workload() {
  local wl="$OUT/$1.jsonl"
  : >"$wl"
  "$LADDER" workload chat --api completions --requests "$REQUESTS" --rate 50 --turns 1 --max-tokens 24 \
    --chat-system "" -o "$OUT/$1-chat.jsonl" >/dev/null 2>&1
  "$LADDER" workload long-context --requests "$REQUESTS" --rate 50 --fill "$FILL" --endpoint "$2" --max-tokens 24 \
    -o "$OUT/$1-long.jsonl" >/dev/null 2>&1
  "$LADDER" workload rare --requests "$REQUESTS" --rate 50 --fill "$FILL" --endpoint "$2" --max-tokens 24 \
    -o "$OUT/$1-rare.jsonl" >/dev/null 2>&1
  # Both models share stories260K's 512-piece vocabulary: about 1.5 characters a token.
  "$LADDER" workload needle --requests "$REQUESTS" --rate 50 --context-tokens "$3" --chars-per-token 1.5 \
    --max-tokens 24 \
    -o "$OUT/$1-needle.jsonl" >/dev/null 2>&1
  cat "$OUT/$1-chat.jsonl" "$OUT/$1-long.jsonl" "$OUT/$1-rare.jsonl" "$OUT/$1-needle.jsonl" >"$wl"
}

if [[ ! -f "$OUT/retrieval.gguf" ]]; then
  "$LADDER" synth --preset retrieval -o "$OUT/retrieval.gguf" >/dev/null
fi

num() { if [[ "$1" == "-" ]]; then echo -; else printf %.2g "$1"; fi; }
row() { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$@"; }
row model kv slice verified exact mean_match earliest_divergence "mean / max KL" task
for spec in "stories260K:$SHARED/models/stories260K.gguf:20" "retrieval:$OUT/retrieval.gguf:3000"; do
  IFS=: read -r name model needle_tokens <<<"$spec"
  serve "$model" "$name" f16
  workload "$name" "$URL" "$needle_tokens"
  "$LADDER" replay --endpoint "$URL" --workload "$OUT/$name.jsonl" --out "$OUT/$name-f16" \
    --save-reference "$OUT/$name-ref.json" --quiet >/dev/null
  stop_server
  for fmt in $FORMATS; do
    serve "$model" "$name" "$fmt"
    "$LADDER" replay --endpoint "$URL" --workload "$OUT/$name.jsonl" --out "$OUT/$name-$fmt" \
      --reference "$OUT/$name-ref.json" --verify approx --quiet >/dev/null || true
    stop_server
    jq -r --arg m "$name" --arg f "$fmt" '.runs[0].quality.per_slice[] |
      [$m, $f, .name, "\(.passed)/\(.requests)", "\(.exact)", .mean_match, (.earliest_divergence // "-"),
       (.mean_kl // "-"), (.max_kl // "-"),
       (if .task_checked > 0 then "\(.task_passed)/\(.task_checked)" else "-" end)] | @tsv' \
      "$OUT/$name-$fmt/record.json" | while IFS=$'\t' read -r m f s v ex mm ed kl kx task; do
      row "$m" "$f" "$s" "$v" "$ex" "$(printf %.3f "$mm")" "$ed" "$(num "$kl") / $(num "$kx")" "$task"
    done
  done
done
