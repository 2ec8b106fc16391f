#!/usr/bin/env bash
# Quantized KV cache against llama.cpp's, paired in rounds: batch-1 decode
# of one synthetic 110m model (context 4096) with every position up to DEPTH
# already in the cache, for Ladder's f16 / q8 / q4 KV and llama.cpp's
# f16 / q8_0 / q4_0 (flash attention on, which llama.cpp needs for a
# quantized V cache). Each round runs both tools on one format and depth
# moments apart; the summary gives per-format medians, the range of the
# per-round ratios, and each tool's slowdown against its own f16.
#
# Usage: scripts/bench_llamacpp_kv.sh LLAMA_CPP_BUILD_DIR [LADDER_BUILD_DIR]
#   LLAMA_CPP_BUILD_DIR holds bin/llama-batched-bench of a llama.cpp you
#   built yourself (CPU only). This script never downloads or builds it. A
#   tree without that tool: set LLAMA_BATCHED_BENCH="BUILD/bench/llamacpp_timing
#   batched" (bench/CMakeLists.txt).
# Environment: LADDER_BENCH_THREADS (2), LADDER_BENCH_ROUNDS (3),
#   LADDER_KV_DEPTHS ("2048 3968"), LADDER_BENCH_WEIGHTS (q8_0),
#   LADDER_BENCH_MODELS (the model cache of scripts/bench.sh). llama.cpp runs
#   with OMP_WAIT_POLICY=passive unless it is set: its OpenMP threads otherwise
#   spin at every barrier, and on a shared machine its decode collapses.
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA=$1
BUILD_DIR=${2:-build}
LADDER="$BUILD_DIR/src/cli/ladder"
THREADS=${LADDER_BENCH_THREADS:-2}
ROUNDS=${LADDER_BENCH_ROUNDS:-3}
DEPTHS=${LADDER_KV_DEPTHS:-"2048 3968"}
WEIGHTS=${LADDER_BENCH_WEIGHTS:-q8_0}
MODELS=${LADDER_BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ladder/bench}
read -ra LLAMA_BATCHED <<<"${LLAMA_BATCHED_BENCH:-$LLAMA/bin/llama-batched-bench}"
for tool in "${LLAMA_BATCHED[0]}" "$LADDER"; do
  [[ -x "$tool" ]] || { echo "error: $tool not found or not executable" >&2; exit 2; }
done
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
mkdir -p "$MODELS"
M="$MODELS/110m-$WEIGHTS-ctx4096.gguf"
[[ -f "$M" ]] || "$LADDER" synth --preset 110m --ctx 4096 --dtype "$WEIGHTS" -o "$M" > /dev/null
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Ladder's format name -> llama.cpp's cache type.
declare -A LLAMA_TYPE=([f16]=f16 [q8]=q8_0 [q4]=q4_0)

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; threads $THREADS; rounds $ROUNDS; weights $WEIGHTS; llama.cpp OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
for R in $(seq 1 "$ROUNDS"); do
  for D in $DEPTHS; do
    for F in f16 q8 q4; do
      echo "== round $R/$ROUNDS depth $D kv $F (load average $(cut -d' ' -f1 /proc/loadavg))"
      "$LADDER" bench model -m "$M" --batch 1 --context "$D" --steps 32 --prompt 16 --repeats 1 \
        --kv-dtype "$F" -t "$THREADS" 2> /dev/null > "$OUT/ladder-$F-$D-$R.txt"
      T=${LLAMA_TYPE[$F]}
      "${LLAMA_BATCHED[@]}" -m "$M" -t "$THREADS" -c 4096 -b 2048 -ub 512 -fa on -ctk "$T" -ctv "$T" \
        -npp "$D" -ntg 32 -npl 1 2> /dev/null > "$OUT/llama-$F-$D-$R.txt" || true
    done
  done
done

python3 - "$OUT" "$ROUNDS" $DEPTHS << 'EOF'
import re, statistics, sys
out, rounds, depths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def ladder(path):
    for line in open(path):
        m = re.match(r"decode batch 1\s+([\d.]+)", line)
        if m:
            return float(m.group(1))
    return None

def llama(path):
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 8 and cells[2] == "1" and cells[0].isdigit():
            return float(cells[7])  # S_TG t/s
    return None

def med(v):
    v = [x for x in v if x]
    return statistics.median(v) if v else float("nan")

def spread(v):
    v = [x for x in v if x]
    return f"{statistics.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})" if v else "n/a"

print()
print("| depth | KV | Ladder tok/s | llama.cpp tok/s | ratio (per round) | Ladder vs its f16 | llama.cpp vs its f16 |")
print("|---|---|---|---|---|---|---|")
for d in depths:
    base_l = [ladder(f"{out}/ladder-f16-{d}-{r}.txt") for r in range(1, rounds + 1)]
    base_c = [llama(f"{out}/llama-f16-{d}-{r}.txt") for r in range(1, rounds + 1)]
    for f, t in (("f16", "f16"), ("q8", "q8_0"), ("q4", "q4_0")):
        L = [ladder(f"{out}/ladder-{f}-{d}-{r}.txt") for r in range(1, rounds + 1)]
        C = [llama(f"{out}/llama-{f}-{d}-{r}.txt") for r in range(1, rounds + 1)]
        ratio = [a / b if a and b else None for a, b in zip(L, C)]
        own_l = [a / b if a and b else None for a, b in zip(L, base_l)]
        own_c = [a / b if a and b else None for a, b in zip(C, base_c)]
        print(f"| {d} | {f} / {t} | {med(L):.1f} | {med(C):.1f} | {spread(ratio)} | {spread(own_l)} | {spread(own_c)} |")
EOF
