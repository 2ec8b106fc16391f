// What the hand-written AVX-512 loops of bench/*_bench.cc share: the
// intrinsics, the target attributes that compile those loops above the
// build's baseline ISA (each bench checks the CPU before running them), and
// the warnings GCC raises on its own AVX-512 headers. x86-64 only.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge
// operand, which -Wmaybe-uninitialized reports at every inlined call.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define LADDER_BENCH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define LADDER_BENCH_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif
