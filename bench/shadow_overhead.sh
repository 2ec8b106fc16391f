#!/usr/bin/env bash
# What shadow verification costs the live traffic: the same workload replayed
# against `ladder serve` without (A) and with (B) --shadow-rate, in
# counterbalanced blocks (A B B A, then B A A B), one server per run. Per
# pair of runs it prints TTFT p99 and E2E p99 of both sides and their ratio
# B / A; the estimate is the geometric mean of the paired ratios with a
# two-sided 95% Student t interval over the pairs' log ratios (a pair of
# runs is the unit: requests of one run share its bursts). Also the
# shadow's core-seconds and verified fraction from the B runs' /metrics.
# Model: the 110m synthetic model, Q8_0 (~4.5 ms a token at batch 1 on 2
# cores); workload: the Mooncake conversation trace, scaled down.
# Usage: bench/shadow_overhead.sh [BUILD_DIR] [OUT_DIR]   (LADDER_BIN overrides BUILD_DIR/src/cli/ladder)
#   SHADOW_RATE (0.2), SHADOW_BUDGET (0.1), SHADOW_BLOCKS (2 blocks of 4 runs),
#   SHADOW_REQUESTS (24), SHADOW_REQUEST_RATE (2 per second), THREADS (2)
set -euo pipefail
BUILD_DIR=${1:-build}
OUT=${2:-${TMPDIR:-/tmp}/ladder-shadow-overhead}
LADDER=${LADDER_BIN:-$BUILD_DIR/src/cli/ladder}
SHARED=${LADDER_SHARED_DIR:-../shared}
SHARED=$(cd "$SHARED" && pwd)
RATE=${SHADOW_RATE:-0.2}
BUDGET=${SHADOW_BUDGET:-0.1}
BLOCKS=${SHADOW_BLOCKS:-2}
REQUESTS=${SHADOW_REQUESTS:-24}
REQUEST_RATE=${SHADOW_REQUEST_RATE:-2}
THREADS=${THREADS:-2}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "error: jq is needed" >&2; exit 2; }

MODEL="$OUT/m110-q8.gguf"
[ -f "$MODEL" ] || "$LADDER" --log-level warn synth --preset 110m --dtype q8_0 -o "$MODEL" >/dev/null

# shellcheck source=bench/serve_helpers.sh
source "$(dirname "$0")/serve_helpers.sh"

# run SIDE INDEX: one server, one replay; prints "ttft_p99 e2e_p99 [shadow_core_s verified failed]".
run() {
  local side=$1 i=$2 args=(-m "$MODEL")
  [[ $side == B ]] && args+=(--shadow-rate "$RATE" --shadow-budget "$BUDGET")
  start_server "$OUT/server-$side-$i.log" "${args[@]}"
  "$LADDER" --log-level warn replay --endpoint "$URL" --workload "$SHARED/traces/mooncake_conversation_trace.jsonl" \
    --requests "$REQUESTS" --rate "$REQUEST_RATE" --seed "$i" --length-scale 0.05 --max-input-tokens 96 \
    --max-output-tokens 48 --out "$OUT/run-$side-$i" >/dev/null 2>"$OUT/replay-$side-$i.log"
  local metrics=""
  [[ $side == B ]] && metrics=$(curl -s "$URL/metrics")
  stop_server
  local rec="$OUT/run-$side-$i/record.json"
  local ttft e2e
  ttft=$(jq '[.. | objects | select(has("overall")) | .overall.ttft_ms.p99][0]' "$rec")
  e2e=$(jq '[.. | objects | select(has("overall")) | .overall.e2e_ms.p99][0]' "$rec")
  if [[ $side == B ]]; then
    local core verified failed
    core=$(awk '$1 == "ladder_shadow_core_seconds_total" {print $2}' <<<"$metrics")
    verified=$(awk '$1 == "ladder_shadow_requests_total{outcome=\"verified\"}" {print $2}' <<<"$metrics")
    failed=$(awk '$1 == "ladder_shadow_requests_total{outcome=\"failed\"}" {print $2}' <<<"$metrics")
    echo "$ttft $e2e $core $verified $failed"
  else
    echo "$ttft $e2e"
  fi
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs; threads $THREADS"
echo "B: --shadow-rate $RATE --shadow-budget $BUDGET; $BLOCKS blocks of 4 runs; $REQUESTS requests at $REQUEST_RATE/s each"
echo
echo "| pair | order | TTFT p99 A ms | TTFT p99 B ms | B/A | E2E p99 A ms | E2E p99 B ms | B/A | shadow core-s | shadow verified/judged |"
echo "|---|---|---|---|---|---|---|---|---|---|"
: >"$OUT/ratios.txt"
pair=0
for ((b = 0; b < BLOCKS; b++)); do
  if ((b % 2 == 0)); then order=(A B B A); else order=(B A A B); fi
  declare -A got=()
  k=0
  for side in "${order[@]}"; do
    got[$side$k]=$(run "$side" "$((b * 4 + k))")
    k=$((k + 1))
  done
  # Pairs: the first A with the first B, the second with the second.
  as=() bs=()
  for ((k = 0; k < 4; k++)); do
    if [[ ${order[$k]} == A ]]; then as+=("${got[A$k]}"); else bs+=("${got[B$k]}"); fi
  done
  for j in 0 1; do
    read -r ta ea <<<"${as[$j]}"
    read -r tb eb core ver fail <<<"${bs[$j]}"
    pair=$((pair + 1))
    first=$([[ ${order[0]} == A && $j == 0 ]] || [[ ${order[2]} == A && $j == 1 ]] && echo A || echo B)
    awk -v ta="$ta" -v tb="$tb" -v ea="$ea" -v eb="$eb" -v p="$pair" -v o="${order[*]}" -v c="$core" \
      -v v="$ver" -v f="$fail" 'BEGIN {
        printf "| %d | %s | %.1f | %.1f | %.3f | %.1f | %.1f | %.3f | %.3f | %d/%d |\n", p, o, ta, tb, tb / ta, ea, eb, eb / ea, c, v, v + f }'
    echo "$ta $tb $ea $eb" >>"$OUT/ratios.txt"
  done
done
echo
awk 'function tq(df) { # two-sided 95% Student t quantile
       split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131", q, " ")
       return df <= 15 ? q[df] : 1.96 + 2.4 / df }
     { lt[NR] = log($2 / $1); le[NR] = log($4 / $3) }
     END {
       n = NR
       for (i = 1; i <= n; i++) { st += lt[i]; se += le[i] }
       mt = st / n; me = se / n
       for (i = 1; i <= n; i++) { vt += (lt[i] - mt)^2; ve += (le[i] - me)^2 }
       ht = n > 1 ? tq(n - 1) * sqrt(vt / (n - 1) / n) : 0; he = n > 1 ? tq(n - 1) * sqrt(ve / (n - 1) / n) : 0
       printf "TTFT p99 with / without shadowing: %.3f (95%% CI %.3f - %.3f) over %d pairs of runs\n", exp(mt), exp(mt - ht), exp(mt + ht), n
       printf "E2E p99 with / without shadowing: %.3f (95%% CI %.3f - %.3f)\n", exp(me), exp(me - he), exp(me + he)
     }' "$OUT/ratios.txt"
