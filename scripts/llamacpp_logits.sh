#!/usr/bin/env bash
# Writes llama.cpp's reference logits for every synthetic architecture and
# weight type into tests/data/llamacpp_logits/ARCH-DTYPE.json, the files
# tests/model/llamacpp_reference_test.cc holds Ladder to. Each model is
# `ladder synth --preset tiny --dim 256 --heads 4 --kv-heads 2 --ffn 512
# --seed 7 --builtin-vocab --vocab 512 --arch ARCH --dtype DTYPE`, which the
# test writes again byte for byte; llama.cpp
# decodes a fixed prompt of token ids and then 32 tokens greedily, one
# thread, and records each step's greedy id and top-5 logits
# (bench/llamacpp_logits.cc). mistral is left out: llama.cpp has no
# architecture of that name (its Mistral GGUFs say llama).
#
# Usage: scripts/llamacpp_logits.sh LLAMA_CPP_DIR [LADDER_BUILD_DIR]
#   LLAMA_CPP_DIR: a llama.cpp source tree you built yourself (CPU only,
#   shared libraries in LLAMA_CPP_DIR/build/bin). This script never
#   downloads or builds llama.cpp. For another layout set LLAMA_CPP_INCLUDE
#   (the directories of llama.h and ggml.h, ';'-separated) and
#   LLAMA_CPP_LIBS (the libraries to link, ';'-separated).
# Environment: LLAMA_CPP_VERSION (recorded in each file, e.g. "b10256
#   (6c8dcaa)"), LLAMA_LOGITS_ARCHS, LLAMA_LOGITS_TYPES,
#   LLAMA_LOGITS_WINDOW_ARCHS (also written with an 8-position window).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA=$1
BUILD_DIR=$(realpath -m "${2:-build}")
VERSION=${LLAMA_CPP_VERSION:-unknown}
ARCHS=${LLAMA_LOGITS_ARCHS-"llama qwen2 qwen3 phi3 gemma2 gemma3"}
TYPES=${LLAMA_LOGITS_TYPES-"f32 f16 q8_0 q4_k"}
SWA_ARCHS=${LLAMA_LOGITS_WINDOW_ARCHS-"gemma2 gemma3"}
# The prompt: token ids of the built-in vocabulary (BOS first).
PROMPT="1 45 100 211 300 77 5 499 260 18 402 133"
command -v jq >/dev/null || { echo "error: jq is needed" >&2; exit 2; }

cd "$(dirname "$0")/.."
source scripts/llamacpp_tools.sh
build_llamacpp_tools "$LLAMA" "$BUILD_DIR" llamacpp_logits
OUT=tests/data/llamacpp_logits
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SHAPE=(--preset tiny --dim 256 --heads 4 --kv-heads 2 --ffn 512 --seed 7 --builtin-vocab --vocab 512)
for A in $ARCHS; do
  for T in $TYPES; do
    "$BUILD_DIR/src/cli/ladder" synth "${SHAPE[@]}" --arch "$A" --dtype "$T" -o "$TMP/m.gguf" >/dev/null
    # shellcheck disable=SC2086
    "$BUILD_DIR/bench/llamacpp_logits" "$TMP/m.gguf" 32 $PROMPT 2>"$TMP/log" >"$TMP/out.json" ||
      { cat "$TMP/log" >&2; echo "error: llama.cpp failed on $A $T" >&2; exit 1; }
    jq -c --arg a "$A" --arg t "$T" --arg v "$VERSION" --arg shape "${SHAPE[*]}" \
      '{llama_cpp: $v, synth: {arch: $a, dtype: $t, args: $shape}} + .' "$TMP/out.json" >"$OUT/$A-$T.json"
    echo "$OUT/$A-$T.json"
  done
done
# Sliding windows shorter than the 44 positions (F32 weights): every other
# layer of gemma2, five of six of gemma3. Not the other architectures:
# llama.cpp b10256 ignores attention.sliding_window for llama, qwen2 and
# qwen3 and turns it off for phi3 (its "Phi SWA is currently disabled"),
# where Ladder applies it to every layer, as the models' own configurations do.
for A in $SWA_ARCHS; do
  "$BUILD_DIR/src/cli/ladder" synth "${SHAPE[@]}" --sliding-window 8 --arch "$A" --dtype f32 -o "$TMP/m.gguf" >/dev/null
  # shellcheck disable=SC2086
  "$BUILD_DIR/bench/llamacpp_logits" "$TMP/m.gguf" 32 $PROMPT 2>"$TMP/log" >"$TMP/out.json" ||
    { cat "$TMP/log" >&2; echo "error: llama.cpp failed on $A with a window" >&2; exit 1; }
  jq -c --arg a "$A" --arg v "$VERSION" --arg shape "${SHAPE[*]} --sliding-window 8" \
    '{llama_cpp: $v, synth: {arch: $a, dtype: "f32", args: $shape}} + .' "$TMP/out.json" >"$OUT/$A-f32-window8.json"
  echo "$OUT/$A-f32-window8.json"
done
