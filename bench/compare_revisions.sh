#!/usr/bin/env bash
# Two `ladder` binaries (two revisions of this project) on one machine in one
# run, paired: each round runs both, alternating which goes first, so a
# machine that speeds up or slows down during the run moves both sides.
#
#   bench/compare_revisions.sh OLD_LADDER NEW_LADDER MODEL [ROUNDS]
#
# Per round: `bench engine` (requests through the scheduler, KV manager and
# sampler together, and one by one) and `bench model --batch 1,16` (the
# forward pass alone). Prints each figure per round and the median of the
# per-round ratios new / old (1.00 = no change; above 1 = the new one is
# faster). Threads: LADDER_BENCH_THREADS (default 2).
set -euo pipefail

if [[ $# -lt 3 || $# -gt 4 ]]; then
  echo "usage: $0 OLD_LADDER NEW_LADDER MODEL [ROUNDS]" >&2
  exit 2
fi
old=$1
new=$2
model=$3
rounds=${4:-3}
threads=${LADDER_BENCH_THREADS:-2}
for b in "$old" "$new"; do
  [[ -x "$b" ]] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
[[ -f "$model" ]] || { echo "$0: no model file $model (make one: ladder synth --preset 110m --dtype q8_0 -o FILE)" >&2; exit 2; }

echo "old: $("$old" --version 2>&1 | head -1)"
echo "new: $("$new" --version 2>&1 | head -1)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), threads $threads, model $model"

# One measurement: prints "engine_together engine_one decode1 decode16 prefill" (tok/s).
measure() {
  local bin=$1 eng mdl
  eng=$("$bin" bench engine -m "$model" --requests 32 --prompt 128 --output 64 --threads "$threads" 2>/dev/null)
  mdl=$("$bin" bench model -m "$model" --batch 1,16 --steps 32 --repeats 1 --threads "$threads" 2>/dev/null)
  local together one d1 d16 pf
  together=$(awk '/^together:/ {print $2}' <<<"$eng")
  one=$(awk '/^one by one:/ {print $4}' <<<"$eng")
  # `bench model` rows: a 28-character label, then tok/s.
  d1=$(awk '/^decode batch 1 / {split(substr($0, 29), f, " "); print f[1]}' <<<"$mdl")
  d16=$(awk '/^decode batch 16 / {split(substr($0, 29), f, " "); print f[1]}' <<<"$mdl")
  pf=$(awk '/^prefill / {split(substr($0, 29), f, " "); print f[1]; exit}' <<<"$mdl")
  echo "$together $one $d1 $d16 $pf"
}

names=("engine together" "engine one by one" "decode batch 1" "decode batch 16" "prefill")
ratios=()
printf "%-6s %-4s %16s %18s %15s %16s %10s\n" round side "${names[@]}"
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(old new); else order=(new old); fi
  declare -A got=()
  for side in "${order[@]}"; do
    bin=$old
    [[ $side == new ]] && bin=$new
    got[$side]=$(measure "$bin")
    read -r -a v <<<"${got[$side]}"
    printf "%-6s %-4s %16s %18s %15s %16s %10s\n" "$r" "$side" "${v[@]}"
  done
  read -r -a o <<<"${got[old]}"
  read -r -a n <<<"${got[new]}"
  line=""
  for i in "${!names[@]}"; do line+="$(awk -v a="${n[$i]}" -v b="${o[$i]}" 'BEGIN {printf "%.3f ", a / b}')"; done
  ratios+=("$line")
  unset got
done

echo
echo "new / old, median of $rounds paired rounds (per-round ratios in brackets):"
for i in "${!names[@]}"; do
  col=()
  for line in "${ratios[@]}"; do
    read -r -a f <<<"$line"
    col+=("${f[$i]}")
  done
  med=$(printf "%s\n" "${col[@]}" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
  printf "  %-18s %.2fx  [%s]\n" "${names[$i]}" "$med" "${col[*]}"
done
