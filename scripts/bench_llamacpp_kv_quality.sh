#!/usr/bin/env bash
# Ladder's quantized KV formats (q8, q4) against llama.cpp's (q8_0, q4_0) on
# the same GGUF and the same prompts, judged the same way. Ladder's rows come
# from bench/kv_quality.sh (a replay per format against a rung-1 f16
# reference, --verify approx); llama.cpp's from bench/llamacpp_kv_quality,
# which decodes the same workload file greedily with an f16 KV cache and
# with each quantized one and compares them with Ladder's own comparison
# (harness::compare_outputs: exact outputs, match fraction, top-5 KL up to
# the first divergence). The model is the retrieval model (head dim 128,
# context 4096); stories260K's 8-dim heads are too small for llama.cpp's
# 32-wide KV blocks, so it has Ladder rows only.
#
# Usage: scripts/bench_llamacpp_kv_quality.sh LLAMA_CPP_DIR [LADDER_BUILD_DIR] [OUT_DIR]
#   LLAMA_CPP_DIR: a llama.cpp source tree you built yourself (CPU only,
#   shared libraries in LLAMA_CPP_DIR/build/bin). This script never
#   downloads or builds llama.cpp. For another layout set LLAMA_CPP_INCLUDE
#   (the directories of llama.h and ggml.h, ';'-separated) and
#   LLAMA_CPP_LIBS (the libraries to link, ';'-separated).
# Environment: KV_QUALITY_REQUESTS (36 per slice), KV_QUALITY_FILL (0.6),
#   LLAMA_KV_TYPES ("q8_0 q4_0"), LADDER_BENCH_THREADS (2); KV_QUALITY_FORMATS
#   for Ladder's side ("q8 q4").
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA=$1
BUILD_DIR=$(realpath -m "${2:-build}")
OUT=$(realpath -m "${3:-${TMPDIR:-/tmp}/ladder-kv-vs-llamacpp}")
THREADS=${LADDER_BENCH_THREADS:-2}
TYPES=${LLAMA_KV_TYPES:-"q8_0 q4_0"}
export KV_QUALITY_REQUESTS=${KV_QUALITY_REQUESTS:-36} KV_QUALITY_FILL=${KV_QUALITY_FILL:-0.6}
export KV_QUALITY_FORMATS=${KV_QUALITY_FORMATS:-"q8 q4"} LADDER_BENCH_THREADS=$THREADS

cd "$(dirname "$0")/.."
echo "== building bench/llamacpp_kv_quality against $LLAMA" >&2
source scripts/llamacpp_tools.sh
build_llamacpp_tools "$LLAMA" "$BUILD_DIR" llamacpp_kv_quality
mkdir -p "$OUT"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; $KV_QUALITY_REQUESTS requests per slice, fill $KV_QUALITY_FILL"
echo
echo "Ladder (bench/kv_quality.sh: replay --verify approx against rung 1 with f16 KV):"
bench/kv_quality.sh "$BUILD_DIR" "$OUT"
echo
echo "llama.cpp on $OUT/retrieval.gguf, the same workload ($OUT/retrieval.jsonl), against its own f16 KV:"
# shellcheck disable=SC2086
"$BUILD_DIR/bench/llamacpp_kv_quality" "$OUT/retrieval.gguf" "$OUT/retrieval.jsonl" 0 "$THREADS" $TYPES \
  2>"$OUT/llamacpp.log" || { echo "error: llamacpp_kv_quality failed; see $OUT/llamacpp.log" >&2; exit 1; }
