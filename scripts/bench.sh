#!/usr/bin/env bash
# `make bench`: this machine's roofline and how close Ladder's kernels get to
# it, as ratios measured in the same run. Usage: scripts/bench.sh BUILD_DIR
# Threads: LADDER_BENCH_THREADS (default 2). With LLAMA_CPP_BUILD set to a
# llama.cpp build directory of your own (bin/llama-bench, bin/llama-batched-bench),
# it also runs scripts/bench_llamacpp.sh against it (nothing is downloaded).
set -euo pipefail
BUILD_DIR=${1:-build}
THREADS=${LADDER_BENCH_THREADS:-2}

echo "== ladder bench roofline (threads=$THREADS)"
"$BUILD_DIR/src/cli/ladder" bench roofline --threads "$THREADS"

echo
echo "== kernel micro-benchmarks (weights hot in cache: the compute side)"
"$BUILD_DIR/bench/ops_bench" --benchmark_counters_tabular=true \
  --benchmark_filter='Matmul/(F32|Q8_0|Q4_0|Q4_K|Q6_K)_768x768/(1|16)/|RmsNorm|SiluMul|Softmax|Rope|Attention|PoolDispatch'

echo
echo "== roofline as Google Benchmark cases"
LADDER_BENCH_THREADS=$THREADS "$BUILD_DIR/bench/roofline_bench" --benchmark_counters_tabular=true

# The forward pass and the engine on synthetic 110M models (random weights of
# a real architecture), generated once into the cache: the figures
# docs/BENCHMARKS.md records.
MODELS=${LADDER_BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ladder/bench}
mkdir -p "$MODELS"
for T in f32 f16 bf16 q8_0 q4_0 q4_k; do
  M="$MODELS/110m-$T.gguf"
  if [[ ! -f "$M" ]]; then
    echo
    echo "== generating $M"
    "$BUILD_DIR/src/cli/ladder" synth --preset 110m --dtype "$T" -o "$M"
  fi
  echo
  echo "== ladder bench model -m $M --steps 32 (threads=$THREADS)"
  "$BUILD_DIR/src/cli/ladder" bench model -m "$M" --steps 32 --threads "$THREADS"
done

echo
echo "== ladder bench engine: 64 requests together against one by one (threads=$THREADS)"
"$BUILD_DIR/src/cli/ladder" bench engine -m "$MODELS/110m-q8_0.gguf" --requests 64 --prompt 256 --output 128 \
  --threads "$THREADS"

if [[ -n "${LLAMA_CPP_BUILD:-}" ]]; then
  echo
  echo "== Ladder against llama.cpp ($LLAMA_CPP_BUILD), paired rounds"
  LADDER_BENCH_MODELS="$MODELS" bash "$(dirname "$0")/bench_llamacpp.sh" "$LLAMA_CPP_BUILD" "$BUILD_DIR"
fi
