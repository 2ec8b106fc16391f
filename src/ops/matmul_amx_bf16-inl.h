// Per-target (AVX3_DL only) AMX-BF16 kernels for F16 and BF16 weights,
// compiled through matmul_simd.cc and used for EVERY batch size once a
// matrix has been packed for them (ops/packed_weights.h; only where
// amx_bf16_active(), ops/amx.h): a row's result must not depend on the batch,
// so one-row decode runs on the tiles too (its 16-row tile padded with zero
// rows, which costs compute that memory-bound decode has to spare).
//
// Arithmetic, "bf16x3": a tile product multiplies bf16 pairs and accumulates
// in F32. Each activation is split into x = xh + xl (two bf16, round to
// nearest even: 16 significant bits), each F16 weight into w = wh + wl (two
// bf16, exactly: F16 has 11 significant bits) and a BF16 weight is its own
// wh. Per 32-element step k, in this order:
//   C += xh * wh;  C += xl * wh;  C += xh * wl (F16 only)
// dropping xl * wl (at most 2^-16 of |x w|). The order depends on n_in
// alone, so results are batch invariant bit for bit; they differ from the
// FMA kernels' (which is why kernel_fingerprint() names this path).
//
// Packed layout, per group of 16 output columns (a short last group repeats
// its last column), per 32-element step (n_in padded with zeros): 16 rows of
// 64 bytes, row p holding for each column c its elements 2p and 2p + 1 (the
// pair layout tdpbf16ps reads from B) as raw F16 or BF16 bits: 1 KiB, the
// size of the weights themselves.

#if defined(LADDER_OPS_MATMUL_AMX_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_AMX_BF16_INL_H_
#undef LADDER_OPS_MATMUL_AMX_BF16_INL_H_
#else
#define LADDER_OPS_MATMUL_AMX_BF16_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_simd.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

#include "ops/amx_tiles.h"

HWY_BEFORE_NAMESPACE();
LADDER_TARGET_FEATURES_PUSH("amx-tile,amx-int8,amx-bf16,avx512bf16")
namespace ladder::ops::HWY_NAMESPACE {

inline constexpr int64_t kBf16Step = 32;         // elements of a row per tile product
inline constexpr int64_t kBf16StepBytes = 1024;  // 16 columns x 32 elements x 2 bytes

// v rounded to the nearest bf16 (ties to even), as an F32 whose low 16 bits
// are zero (finite values; an infinity stays one).
HWY_INLINE __m512 bf16_round(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd);
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

// 32 floats (a: elements 0-15, b: 16-31) as bf16 hi = bf16(v) and lo =
// bf16(v - hi). hi is exact in bf16, so vcvtne2ps2bf16 only moves it; lo is
// rounded to nearest even by the same instruction.
HWY_INLINE void split_bf16x32(__m512 a, __m512 b, __m512i* hi, __m512i* lo) {
  const __m512 ha = bf16_round(a), hb = bf16_round(b);
  *hi = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hb, ha));
  *lo = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha)));
}

// Exported: groups [g_begin, g_end) of 16 columns of t.w (F16 or BF16; t.y_stride
// carries n_out) in the layout at the top.
void PackBf16Groups(const detail::MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  const int64_t steps = (t.n_in + kBf16Step - 1) / kBf16Step;
  for (int64_t g = g_begin; g < g_end; ++g) {
    uint8_t* dst = out + g * steps * kBf16StepBytes;
    std::memset(dst, 0, static_cast<size_t>(steps * kBf16StepBytes));
    // A pair of elements (2p, 2p + 1) is one 32-bit word of the row and of
    // the layout (element 2p in its low half): moved a word at a time.
    const int64_t pairs = t.n_in / 2;
    for (int c = 0; c < 16; ++c) {
      const int64_t col = std::min<int64_t>(g * 16 + c, t.y_stride - 1);
      const uint8_t* row = t.w + col * t.w_row_bytes;
      const auto at = [&](int64_t p) { return (p / 16) * kBf16StepBytes + (p % 16) * 64 + c * 4; };
      for (int64_t p = 0; p < pairs; ++p) std::memcpy(dst + at(p), row + p * 4, 4);
      if (t.n_in % 2 != 0) std::memcpy(dst + at(pairs), row + pairs * 4, 2);  // its partner stays zero
    }
  }
}

// Exported: rows [0, rows) of x (F32, [rows][n_in]) as bf16 hi and lo parts,
// [rows][bf16_act_stride(n_in)] each (zeros after n_in). The caller zeroes
// whole padding rows.
void SplitActivationsBf16(const float* x, int64_t rows, int64_t n_in, uint16_t* hi, uint16_t* lo) {
  const int64_t padded = detail::bf16_act_stride(n_in);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n_in;
    uint16_t* h = hi + r * padded;
    uint16_t* l = lo + r * padded;
    for (int64_t k = 0; k < padded; k += 32) {
      const auto mask = [&](int64_t at) {
        const int64_t n = std::clamp<int64_t>(n_in - at, 0, 16);
        return static_cast<__mmask16>((1u << n) - 1);
      };
      __m512i vh, vl;
      split_bf16x32(_mm512_maskz_loadu_ps(mask(k), xr + k), _mm512_maskz_loadu_ps(mask(k + 16), xr + k + 16),
                    &vh, &vl);
      _mm512_storeu_si512(h + k, vh);
      _mm512_storeu_si512(l + k, vl);
    }
  }
}

// F16 steps of one packed group as bf16 hi and lo tiles: out[step][0] hi,
// out[step][1] lo (1 KiB each; the pair layout carries over lane for lane).
// An F16 weight splits exactly as w = wh + wl whatever wh's rounding (F16
// has 11 significant bits, wh takes 8, wl the other 3), so wh is w with the
// low 16 bits of its F32 cleared: one AND instead of rounding. One step
// (1 KiB) into hi and lo (1 KiB each).
HWY_INLINE void split_f16_step(const uint8_t* src, uint8_t* hi, uint8_t* lo) {
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  {
    for (int64_t i = 0; i < kBf16StepBytes; i += 64) {
      const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
      const __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32)));
      const __m512 ha = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), top));
      const __m512 hb = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(b), top));
      // Both conversions are exact (hi has 8 significant bits, lo 3).
      _mm512_storeu_si512(hi + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hb, ha)));
      _mm512_storeu_si512(
          lo + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha))));
    }
  }
}

// Every step of a group: out[step][0] hi, out[step][1] lo.
HWY_INLINE void split_f16_group(const uint8_t* grp, int64_t steps, uint8_t* out) {
  for (int64_t s = 0; s < steps; ++s) {
    uint8_t* hi = out + s * 2 * kBf16StepBytes;
    split_f16_step(grp + s * kBf16StepBytes, hi, hi + kBf16StepBytes);
  }
}

// 16 rows x 16 columns of C to y (rows r0.., columns o..): straight from the
// tile when all are valid, else through a buffer.
#define LADDER_BF16_STORE(tile, r0)                                                                      \
  do {                                                                                                   \
    if (take == 16 && (r0) + 16 <= t.rows) {                                                             \
      LADDER_TILE_STORE(tile, t.y + (r0)*t.y_stride + o, t.y_stride * static_cast<long>(sizeof(float))); \
    } else {                                                                                             \
      alignas(64) float buf[16 * 16];                                                                    \
      LADDER_TILE_STORE(tile, buf, 64);                                                                  \
      for (int64_t i = 0; i < 16 && (r0) + i < t.rows; ++i)                                              \
        std::memcpy(t.y + ((r0) + i) * t.y_stride + o, buf + 16 * i, static_cast<size_t>(take) * 4);     \
    }                                                                                                    \
  } while (0)

// One step's products into tile c from activation tiles ah, al (rows at
// row0 of hi/lo, loaded unless kLoadA is false: they are already there) and
// weight tiles bh (hi), bl (lo, F16 only), in the order at the top.
#define LADDER_BF16_STEP(c, ah, al, bh, bl, row0, kLoadA)                         \
  do {                                                                            \
    if (kLoadA) {                                                                 \
      LADDER_TILE_LOAD(ah, xh + (row0)*a_stride_elems + s * kBf16Step, a_stride); \
      LADDER_TILE_LOAD(al, xl + (row0)*a_stride_elems + s * kBf16Step, a_stride); \
    }                                                                             \
    _tile_dpbf16ps(c, ah, bh);                                                    \
    _tile_dpbf16ps(c, al, bh);                                                    \
    if constexpr (kF16) _tile_dpbf16ps(c, ah, bl);                                \
  } while (0)

// The weight tiles (hi, lo) of step s of a group: F16 from its split copy,
// BF16 straight from the packed group.
#define LADDER_BF16_LOAD_B(bh, bl, grp, split_at)                          \
  do {                                                                     \
    if constexpr (kF16) {                                                  \
      LADDER_TILE_LOAD(bh, (split_at) + s * 2 * kBf16StepBytes, 64);       \
      LADDER_TILE_LOAD(bl, (split_at) + (s * 2 + 1) * kBf16StepBytes, 64); \
    } else {                                                               \
      LADDER_TILE_LOAD(bh, (grp) + s * kBf16StepBytes, 64);                \
    }                                                                      \
  } while (0)

// Columns [o_begin, o_end) (o_begin a multiple of 16) of every row from
// packed F16/BF16 weights; xh/xl as SplitActivationsBf16 writes them, with
// rows padded to a multiple of 16 (zeros). Two accumulator tiles hide the
// tile products' latency: two row tiles share each weight tile when there
// are several, else (decode) two column groups share the activation tiles.
// Either way each output is the same chain of products.
template <bool kF16>
void amx_bf16_cols(const detail::MatmulTask& t, const uint8_t* packed, const uint16_t* xh, const uint16_t* xl,
                   int64_t o_begin, int64_t o_end) {
  const int64_t steps = (t.n_in + kBf16Step - 1) / kBf16Step;
  const int64_t a_stride_elems = detail::bf16_act_stride(t.n_in);
  const long a_stride = static_cast<long>(a_stride_elems * 2);
  const int64_t group_bytes = steps * kBf16StepBytes;
  const int64_t row_tiles = (t.rows + 15) / 16;
  thread_local hwy::AlignedFreeUniquePtr<uint8_t[]> split;
  thread_local int64_t split_steps = 0;
  if (kF16 && row_tiles > 1 && steps > split_steps) {
    split = hwy::AllocateAligned<uint8_t>(static_cast<size_t>(steps * 2 * kBf16StepBytes));
    split_steps = steps;
  }
  uint8_t* split0 = split.get();
  if (row_tiles == 1) {
    // Tiles: 0-1 sums of two column groups, 2-3 the activations (hi, lo),
    // 4-5 and 6-7 the two groups' weights. Sums and activations have only
    // the batch's rows (a tile row's result does not depend on the others).
    const int m = static_cast<int>(t.rows);
    TileConfig cfg;
    for (int i = 0; i < 4; ++i) cfg.set(i, m, 64);
    for (int i = 4; i < 8; ++i) cfg.set(i, 16, 64);
    _tile_loadconfig(&cfg);
    // F16 steps are split one step ahead into a ring of two (slot: [group
    // 0 hi, lo, group 1 hi, lo]), so conversion overlaps the tile products
    // and the scratch stays in L1.
    alignas(64) uint8_t ring[2][4 * kBf16StepBytes];
    for (int64_t o = o_begin; o < o_end; o += 32) {
      const bool two = o + 16 < o_end;
      const uint8_t* grp0 = packed + (o / 16) * group_bytes;
      const uint8_t* grp1 = grp0 + group_bytes;
      // Decode streams the weights under the machine's strategy.
      const auto prefetch_step = [&](int64_t s) {
        for (int64_t l = 0; l < kBf16StepBytes; l += 64) {
          prefetch_line(grp0 + s * kBf16StepBytes + t.stream.distance + l, t.stream.prefetch);
          if (two) prefetch_line(grp1 + s * kBf16StepBytes + t.stream.distance + l, t.stream.prefetch);
        }
      };
      const auto split_step = [&](int64_t s) {
        uint8_t* slot = ring[s % 2];
        prefetch_step(s);
        split_f16_step(grp0 + s * kBf16StepBytes, slot, slot + kBf16StepBytes);
        if (two)
          split_f16_step(grp1 + s * kBf16StepBytes, slot + 2 * kBf16StepBytes, slot + 3 * kBf16StepBytes);
      };
      if constexpr (kF16) split_step(0);
      _tile_zero(0);
      if (two) _tile_zero(1);
      for (int64_t s = 0; s < steps; ++s) {
        if constexpr (kF16) {
          if (s + 1 < steps) split_step(s + 1);
          const uint8_t* slot = ring[s % 2];
          LADDER_TILE_LOAD(4, slot, 64);
          LADDER_TILE_LOAD(5, slot + kBf16StepBytes, 64);
        } else {
          prefetch_step(s);
          LADDER_TILE_LOAD(4, grp0 + s * kBf16StepBytes, 64);
        }
        LADDER_BF16_STEP(0, 2, 3, 4, 5, 0, true);
        if (two) {
          if constexpr (kF16) {
            const uint8_t* slot = ring[s % 2];
            LADDER_TILE_LOAD(6, slot + 2 * kBf16StepBytes, 64);
            LADDER_TILE_LOAD(7, slot + 3 * kBf16StepBytes, 64);
          } else {
            LADDER_TILE_LOAD(6, grp1 + s * kBf16StepBytes, 64);
          }
          LADDER_BF16_STEP(1, 2, 3, 6, 7, 0, false);
        }
      }
      int64_t take = std::min<int64_t>(16, o_end - o);
      LADDER_BF16_STORE(0, 0);
      if (two) {
        o += 16;
        take = std::min<int64_t>(16, o_end - o);
        LADDER_BF16_STORE(1, 0);
        o -= 16;
      }
    }
    _tile_release();
    return;
  }
  // Tiles: 0-1 sums of two row tiles, 2-3 and 4-5 their activations (hi,
  // lo), 6-7 the weights (hi, lo), shared by both row tiles.
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) cfg.set(i, 16, 64);
  _tile_loadconfig(&cfg);
  for (int64_t o = o_begin; o < o_end; o += 16) {
    const int64_t take = std::min<int64_t>(16, o_end - o);
    const uint8_t* grp = packed + (o / 16) * group_bytes;
    if constexpr (kF16) split_f16_group(grp, steps, split0);
    for (int64_t rt = 0; rt < row_tiles; rt += 2) {
      const bool two = rt + 1 < row_tiles;
      const int64_t r0 = rt * 16, r1 = r0 + 16;
      _tile_zero(0);
      if (two) _tile_zero(1);
      for (int64_t s = 0; s < steps; ++s) {
        LADDER_BF16_LOAD_B(6, 7, grp, split0);
        LADDER_BF16_STEP(0, 2, 3, 6, 7, r0, true);
        if (two) LADDER_BF16_STEP(1, 4, 5, 6, 7, r1, true);
      }
      LADDER_BF16_STORE(0, r0);
      if (two) LADDER_BF16_STORE(1, r1);
    }
  }
  _tile_release();
}
#undef LADDER_BF16_STEP
#undef LADDER_BF16_LOAD_B
#undef LADDER_BF16_STORE

bool HasAmxBf16Kernels() {
  return true;
}

void MatmulAmxBf16Cols(const detail::MatmulTask& t, const uint8_t* packed, const uint16_t* xh,
                       const uint16_t* xl, int64_t o_begin, int64_t o_end) {
  if (t.type == TensorType::kF16) {
    amx_bf16_cols<true>(t, packed, xh, xl, o_begin, o_end);
  } else {
    amx_bf16_cols<false>(t, packed, xh, xl, o_begin, o_end);
  }
}

}  // namespace ladder::ops::HWY_NAMESPACE
LADDER_TARGET_FEATURES_POP()
HWY_AFTER_NAMESPACE();

#else  // !AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
bool HasAmxBf16Kernels() {
  return false;
}
void PackBf16Groups(const detail::MatmulTask&, int64_t, int64_t, uint8_t*) {}
void SplitActivationsBf16(const float*, int64_t, int64_t, uint16_t*, uint16_t*) {}
void MatmulAmxBf16Cols(const detail::MatmulTask&, const uint8_t*, const uint16_t*, const uint16_t*, int64_t,
                       int64_t) {}
}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_AMX_BF16_INL_H_
