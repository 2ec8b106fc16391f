// Per-target (AVX3_DL only) kernel for BF16 weights on AVX512-BF16's native
// dot product, vdpbf16ps, compiled through matmul_simd.cc and used for EVERY
// batch size once a matrix has been packed for it (ops/packed_weights.h;
// only where bf16_dot_active(), ops/bf16_dot.h): a row's result must not
// depend on the batch, so one-row decode runs it too.
//
// Layout: the pair layout of the AMX-BF16 tiles (matmul_amx_bf16-inl.h),
// packed by the same code: per group of 16 output columns, per 32-element
// step, 16 rows of 64 bytes, row p holding for each column c its elements 2p
// and 2p + 1. One row is one vector whose lane c is column c's pair, so a
// vdpbf16ps against the activations' pair broadcast to every lane adds that
// pair's two products to 16 columns at once: lane c accumulates column c and
// no lanes are summed at the end.
//
// Arithmetic, "bf16x2": each activation is split into x = xh + xl (two
// bf16, round to nearest even: 16 significant bits; SplitActivationsBf16);
// a BF16 weight is exact in bf16. Per pair p of elements (2p, 2p + 1), in
// order of p:
//   C += xh[2p+1] w[2p+1], C += xh[2p] w[2p]   (one vdpbf16ps)
//   C += xl[2p+1] w[2p+1], C += xl[2p] w[2p]   (a second)
// each addition rounded to F32 (denormal inputs and results flushed to zero,
// as the instruction defines). The products are exact, so a result is within
// about 2^-16 of |x w| summed plus the F32 sum's rounding. The order depends
// on n_in alone, so results are batch invariant bit for bit; they differ from
// the FMA kernels' (which is why kernel_fingerprint() names this path).
//
// Why: a vdpbf16ps does 32 multiply-adds where an F32 FMA does 16 and needs
// no widening of the weights; two of them per 32 weights cost what the FMA
// kernel's two FMAs do, without its zero-extend and shift per 16 weights
// (docs/BENCHMARKS.md, "BF16 on AVX512-BF16 dot products": 1.03-1.44x the
// FMA kernel at 512 rows on Zen 5, the same speed at one).

#if defined(LADDER_OPS_MATMUL_BF16_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_BF16_DOT_INL_H_
#undef LADDER_OPS_MATMUL_BF16_DOT_INL_H_
#else
#define LADDER_OPS_MATMUL_BF16_DOT_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_simd.h"
#include "ops/target_features.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
LADDER_TARGET_FEATURES_PUSH("avx512bf16")
namespace ladder::ops::HWY_NAMESPACE {

namespace bf16_dot {

inline constexpr int64_t kStep = detail::kBf16StepElems;  // elements per packed step
inline constexpr int64_t kStepBytes = 1024;               // 16 columns x 32 elements x 2 bytes
inline constexpr int kRows = 4;                           // activation rows per tile
inline constexpr int kGroups = 4;                         // 16-column groups per tile (batches)
inline constexpr int kDecodeGroups = 8;                   // ... and for one row: more chains in flight

struct Task {
  const detail::MatmulTask& t;
  const uint8_t* packed;
  const uint16_t* xh;
  const uint16_t* xl;
  int64_t steps;        // packed steps per group
  int64_t group_bytes;  // steps * kStepBytes
  int64_t a_stride;     // elements per activation row (detail::bf16_act_stride)
};

// The pair (x[2p], x[2p + 1]) of a bf16 row in every lane.
HWY_INLINE __m512bh broadcast_pair(const uint16_t* row, int64_t at) {
  int32_t pair;
  std::memcpy(&pair, row + at, sizeof(pair));
  return reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
}

// Rows [r0, r0 + R) x groups [g0, g0 + G) of 16 columns; columns at or past
// o_end are computed (the packing repeats a short group's last column) and
// not stored.
template <int R, int G>
HWY_INLINE void tile(const Task& a, int64_t r0, int64_t g0, int64_t o_end) {
  const detail::MatmulTask& t = a.t;
  const uint8_t* grp[G];
  for (int g = 0; g < G; ++g) grp[g] = a.packed + (g0 + g) * a.group_bytes;
  const uint16_t* hr[R];
  const uint16_t* lr[R];
  for (int r = 0; r < R; ++r) {
    hr[r] = a.xh + (r0 + r) * a.a_stride;
    lr[r] = a.xl + (r0 + r) * a.a_stride;
  }
  __m512 acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  // Decode streams the weights under the machine's strategy.
  const Prefetch pf = t.rows == 1 ? t.stream.prefetch : Prefetch::kNone;
  for (int64_t s = 0; s < a.steps; ++s) {
    const int64_t sb = s * kStepBytes;
    if (pf != Prefetch::kNone) {
      for (int g = 0; g < G; ++g)
        for (int64_t l = 0; l < kStepBytes; l += 64) prefetch_line(grp[g] + sb + t.stream.distance + l, pf);
    }
    for (int64_t p = 0; p < kStep / 2; ++p) {
      __m512bh w[G];
      for (int g = 0; g < G; ++g) w[g] = reinterpret_cast<__m512bh>(_mm512_load_si512(grp[g] + sb + p * 64));
      const int64_t at = s * kStep + 2 * p;
      // Every sum's hi product, then every lo one: each sum's two
      // dependent products are a whole pass over the tile apart.
      for (int r = 0; r < R; ++r) {
        const __m512bh h = broadcast_pair(hr[r], at);
        for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], h, w[g]);
      }
      for (int r = 0; r < R; ++r) {
        const __m512bh l = broadcast_pair(lr[r], at);
        for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], l, w[g]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float* y = t.y + (r0 + r) * t.y_stride;
    for (int g = 0; g < G; ++g) {
      const int64_t o = (g0 + g) * 16;
      const int64_t take = std::min<int64_t>(16, o_end - o);
      if (take == 16) {
        _mm512_storeu_ps(y + o, acc[r][g]);
      } else if (take > 0) {
        _mm512_mask_storeu_ps(y + o, static_cast<__mmask16>((1u << take) - 1), acc[r][g]);
      }
    }
  }
}

// tile<R, G> for a run-time G in [1, kMaxG].
template <int R, int kMaxG>
HWY_INLINE void tile_groups(const Task& a, int64_t r0, int64_t g0, int64_t groups, int64_t o_end) {
  if constexpr (kMaxG > 1) {
    if (groups < kMaxG) {
      tile_groups<R, kMaxG - 1>(a, r0, g0, groups, o_end);
      return;
    }
  }
  tile<R, kMaxG>(a, r0, g0, o_end);
}

// tile_groups<R, ...> for a run-time R in [1, kMaxR]; one row (decode) takes
// up to kDecodeGroups groups, more rows up to kGroups.
template <int kMaxR>
HWY_INLINE void tile_rows(const Task& a, int64_t r0, int64_t rows, int64_t g0, int64_t groups,
                          int64_t o_end) {
  if constexpr (kMaxR > 1) {
    if (rows < kMaxR) {
      tile_rows<kMaxR - 1>(a, r0, rows, g0, groups, o_end);
      return;
    }
    tile_groups<kMaxR, kGroups>(a, r0, g0, groups, o_end);
  } else {
    tile_groups<1, kDecodeGroups>(a, r0, g0, groups, o_end);
  }
}

// Columns [o_begin, o_end), o_begin a multiple of 16: per block of about 256
// KiB of weights, every row tile over the block's groups.
void cols(const Task& a, int64_t o_begin, int64_t o_end) {
  const detail::MatmulTask& t = a.t;
  const int64_t g_end = (o_end + 15) / 16;
  const int max_g = t.rows == 1 ? kDecodeGroups : kGroups;
  const int64_t block =
      std::max<int64_t>(max_g, (256 << 10) / std::max<int64_t>(a.group_bytes, 1) / max_g * max_g);
  for (int64_t gb = o_begin / 16; gb < g_end; gb += block) {
    const int64_t ge = std::min(g_end, gb + block);
    for (int64_t r = 0; r < t.rows; r += kRows) {
      const int64_t take_r = std::min<int64_t>(kRows, t.rows - r);
      for (int64_t g = gb; g < ge; g += max_g) {
        const int64_t n = std::min<int64_t>(max_g, ge - g);
        tile_rows<kRows>(a, r, take_r, g, n, o_end);
      }
    }
  }
}

}  // namespace bf16_dot

bool HasBf16DotKernels() {
  return true;
}

// Exported: columns [o_begin, o_end) of every row of t from BF16 weights
// packed in the pair layout; xh/xl as SplitActivationsBf16 writes them.
void MatmulBf16DotCols(const detail::MatmulTask& t, const uint8_t* packed, const uint16_t* xh,
                       const uint16_t* xl, int64_t o_begin, int64_t o_end) {
  const int64_t steps = (t.n_in + bf16_dot::kStep - 1) / bf16_dot::kStep;
  const bf16_dot::Task a{
      t, packed, xh, xl, steps, steps * bf16_dot::kStepBytes, detail::bf16_act_stride(t.n_in)};
  bf16_dot::cols(a, o_begin, o_end);
}

}  // namespace ladder::ops::HWY_NAMESPACE
LADDER_TARGET_FEATURES_POP()
HWY_AFTER_NAMESPACE();

#else  // !AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
bool HasBf16DotKernels() {
  return false;
}
void MatmulBf16DotCols(const detail::MatmulTask&, const uint8_t*, const uint16_t*, const uint16_t*, int64_t,
                       int64_t) {}
}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_BF16_DOT_INL_H_
