#!/usr/bin/env bash
# Batch-1 decode of Ladder and llama.cpp side by side under a load this
# script controls: none, a CPU spinner, or a memory-bandwidth hog (dd from
# /dev/zero, writing a 256 MiB buffer over and over), pinned to the last CPU
# while both engines run on the CPUs given (at 2 threads on a 2-CPU machine
# one engine thread shares its CPU with the load). On a shared machine the
# neighbours' load changes between two back-to-back runs; a load of our own
# does not, so the ratios say how each engine copes with a busy neighbour.
#
# Usage: bench/decode_under_load.sh LLAMA_CPP_BUILD_DIR [LADDER_BUILD_DIR]
#   LLAMA_CPP_BUILD_DIR holds bin/llama-bench of a llama.cpp you built
#   yourself (CPU only); this script never downloads or builds it.
# Environment: LADDER_BENCH_TYPES ("q8_0"), LADDER_BENCH_ROUNDS (3),
#   LADDER_BENCH_CPUS_1 and LADDER_BENCH_CPUS_2 (the engines' CPUs at 1 and 2
#   threads: "0" and "0-1"), LADDER_BENCH_MODELS (scripts/bench.sh's cache).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA=$1
LADDER="${2:-build}/src/cli/ladder"
TYPES=${LADDER_BENCH_TYPES:-q8_0}
ROUNDS=${LADDER_BENCH_ROUNDS:-3}
MODELS=${LADDER_BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ladder/bench}
LAST=$(($(nproc) - 1))
for tool in "$LLAMA/bin/llama-bench" "$LADDER"; do
  [[ -x "$tool" ]] || { echo "error: $tool not found or not executable" >&2; exit 2; }
done
command -v taskset > /dev/null || { echo "error: taskset (util-linux) is needed" >&2; exit 2; }
[[ $LAST -ge 1 ]] || { echo "error: needs at least 2 CPUs (one for the load)" >&2; exit 2; }
mkdir -p "$MODELS"

LOAD_PID=
stop_load() { if [[ -n "$LOAD_PID" ]]; then kill "$LOAD_PID" 2> /dev/null || true; wait "$LOAD_PID" 2> /dev/null || true; LOAD_PID=; fi; }
trap stop_load EXIT
start_load() {
  case $1 in
    none) ;;
    spin) taskset -c "$LAST" bash -c 'while :; do :; done' & LOAD_PID=$! ;;
    memory) taskset -c "$LAST" bash -c 'while :; do dd if=/dev/zero of=/dev/null bs=256M count=64 status=none; done' & LOAD_PID=$! ;;
  esac
  sleep 1
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; load on CPU $LAST; rounds $ROUNDS"
echo
echo "| weights | threads (CPUs) | load | Ladder tok/s per round | llama.cpp tok/s per round | Ladder / llama.cpp per round |"
echo "|---|---|---|---|---|---|"
for T in $TYPES; do
  M="$MODELS/110m-$T.gguf"
  [[ -f "$M" ]] || "$LADDER" synth --preset 110m --dtype "$T" -o "$M" > /dev/null
  for threads in 1 2; do
    cpus=$([[ $threads == 1 ]] && echo "${LADDER_BENCH_CPUS_1:-0}" || echo "${LADDER_BENCH_CPUS_2:-0-1}")
    for load in none spin memory; do
      start_load "$load"
      ours=() theirs=() ratios=()
      for _ in $(seq 1 "$ROUNDS"); do
        a=$(taskset -c "$cpus" "$LADDER" bench model -m "$M" --batch 1 --steps 32 --prompt 16 --repeats 1 \
              -t "$threads" 2> /dev/null | awk '/^decode batch 1 /{print $4}')
        b=$(OMP_WAIT_POLICY=passive taskset -c "$cpus" "$LLAMA/bin/llama-bench" -m "$M" -t "$threads" -p 0 -n 32 \
              -r 1 -o csv 2> /dev/null | tail -1 | awk -F, '{gsub(/"/, "", $(NF-1)); printf "%.1f", $(NF-1)}')
        ours+=("$a") theirs+=("$b")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')")
      done
      stop_load
      echo "| $T | $threads ($cpus) | $load | ${ours[*]} | ${theirs[*]} | ${ratios[*]} |"
    done
  done
done
