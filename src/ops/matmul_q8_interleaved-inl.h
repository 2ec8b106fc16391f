// Per-target (AVX3_DL only) integer kernel for Q8_0 and Q4_0 weights with
// AVX512-VNNI, included by matmul-inl.h. Sixteen output columns share one
// vector: their weight blocks are transposed so that int32 lane j holds
// column j, and vpdpbusd multiplies them by 4 activation bytes broadcast to
// every lane. A lane then holds one column's exact integer block dot product,
// so each output is the plain chain
//   acc = fma(float(isum_b), dw_b * dx_b, acc)   over blocks b in order,
// whatever the batch, the tile or the thread: batch invariant by design, with
// the per-block float work shared by 16 columns instead of paid per column.
//
// Activations are bytes u = q + 128 (vpdpbusd wants unsigned x signed); the
// extra 128 * sum(w) of each block is subtracted up front (integer, exact).
// Weights packed at load time skip the transposes: matmul_packed-inl.h.

#if defined(LADDER_OPS_MATMUL_Q8_INTERLEAVED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_Q8_INTERLEAVED_INL_H_
#undef LADDER_OPS_MATMUL_Q8_INTERLEAVED_INL_H_
#else
#define LADDER_OPS_MATMUL_Q8_INTERLEAVED_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/tensor_type.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/matmul_internal.h"
#include "ops/q32_block-inl.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
LADDER_TARGET_FEATURES_PUSH("avx512vnni")
namespace ladder::ops::HWY_NAMESPACE {

// The 16 F16 block scales of block b of the columns, as floats. (Scalar
// loads: a vpgatherdd measured slower on Zen 4.)
template <bool kIsQ4>
HWY_INLINE __m512 gather_scales(const uint8_t* const* cols, int64_t b) {
  alignas(32) uint16_t halves[16];
  for (int j = 0; j < 16; ++j) halves[j] = q32_block_scale<kIsQ4>(cols[j], b);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(halves)));
}

// Packed weights of 16 columns: per block, 8 vectors (dword k of the block
// for columns 0..15), the -128*sum(w) correction and the 16 scales.
struct Interleaved16 {
  hwy::AlignedFreeUniquePtr<__m512i[]> w;     // [nb][8]
  hwy::AlignedFreeUniquePtr<__m512i[]> corr;  // [nb]
  hwy::AlignedFreeUniquePtr<__m512[]> scale;  // [nb]
  int64_t capacity = 0;

  void reserve(int64_t nb) {
    if (nb <= capacity) return;
    w = hwy::AllocateAligned<__m512i>(static_cast<size_t>(nb * 8));
    corr = hwy::AllocateAligned<__m512i>(static_cast<size_t>(nb));
    scale = hwy::AllocateAligned<__m512>(static_cast<size_t>(nb));
    capacity = nb;
  }
};

// Transposes 16 rows of 8 dwords (z[i] = [row i | row i+8]) into out[k] =
// dword k of rows 0..15: an 8x8 transpose in each 256-bit half.
HWY_INLINE void transpose16x8(const __m512i* z, __m512i* out) {
  __m512i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(z[2 * i], z[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(z[2 * i], z[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {                                        // rows 0-3 (t0..t3) and 4-7 (t4..t7)
    u[4 * h + 0] = _mm512_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);  // dwords 0 | 4
    u[4 * h + 1] = _mm512_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);  // 1 | 5
    u[4 * h + 2] = _mm512_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);  // 2 | 6
    u[4 * h + 3] = _mm512_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);  // 3 | 7
  }
  const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_permutex2var_epi64(u[k], lo, u[4 + k]);
    out[k + 4] = _mm512_permutex2var_epi64(u[k], hi, u[4 + k]);
  }
}

template <bool kIsQ4>
void pack16(const uint8_t* const* cols, int64_t nb, Interleaved16& p) {
  const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nb; ++b) {
    __m512i z[8];
    for (int i = 0; i < 8; ++i) {
      z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(q32_block_s8<kIsQ4>(cols[i], b)),
                                q32_block_s8<kIsQ4>(cols[i + 8], b), 1);
    }
    __m512i* w = p.w.get() + b * 8;
    transpose16x8(z, w);
    __m512i s = _mm512_setzero_si512();
    for (int k = 0; k < 8; ++k) s = _mm512_dpbusd_epi32(s, c128, w[k]);  // 128 * sum(w)
    p.corr[b] = _mm512_sub_epi32(_mm512_setzero_si512(), s);
    p.scale[b] = gather_scales<kIsQ4>(cols, b);
  }
}

// R rows against one packed group of 16 columns.
template <int R>
HWY_INLINE void rows16(const Interleaved16& p, int64_t nb, const uint8_t* const* xu, const float* const* xd,
                       __m512* acc) {
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m512i* w = p.w.get() + b * 8;
    __m512i wk[8];
    for (int k = 0; k < 8; ++k) wk[k] = _mm512_load_si512(w + k);
    for (int i = 0; i < R; ++i) {
      const int32_t* x4 = reinterpret_cast<const int32_t*>(xu[i] + b * 32);
      // Independent integer chains hide vpdpbusd latency; integer sums are
      // exact, so the split cannot change a bit.
      constexpr int kChains = R == 1 ? 4 : 2;
      __m512i ch[kChains];
      ch[0] = p.corr[b];
      for (int c = 1; c < kChains; ++c) ch[c] = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k)
        ch[k % kChains] = _mm512_dpbusd_epi32(ch[k % kChains], _mm512_set1_epi32(x4[k]), wk[k]);
      __m512i s = ch[0];
      for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, ch[c]);
      const __m512 scale = _mm512_mul_ps(p.scale[b], _mm512_set1_ps(xd[i][b]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[i]);
    }
  }
}

// One row against 16 columns, packing each block in registers on the fly
// (decode: no reuse, so no scratch round trip). Same arithmetic per lane as
// pack16 + rows16<1>.
template <bool kIsQ4>
HWY_INLINE __m512 row16_fused(const uint8_t* const* cols, int64_t nb, const uint8_t* xu, const float* xd) {
  const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i z[8], w[8];
    for (int i = 0; i < 8; ++i) {
      z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(q32_block_s8<kIsQ4>(cols[i], b)),
                                q32_block_s8<kIsQ4>(cols[i + 8], b), 1);
    }
    transpose16x8(z, w);
    const int32_t* x4 = reinterpret_cast<const int32_t*>(xu + b * 32);
    __m512i corr = _mm512_setzero_si512();
    __m512i ch[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                     _mm512_setzero_si512()};
    for (int k = 0; k < 8; ++k) {
      corr = _mm512_dpbusd_epi32(corr, c128, w[k]);
      ch[k % 4] = _mm512_dpbusd_epi32(ch[k % 4], _mm512_set1_epi32(x4[k]), w[k]);
    }
    const __m512i s = _mm512_sub_epi32(
        _mm512_add_epi32(_mm512_add_epi32(ch[0], ch[1]), _mm512_add_epi32(ch[2], ch[3])), corr);
    const __m512 scale = _mm512_mul_ps(gather_scales<kIsQ4>(cols, b), _mm512_set1_ps(xd[b]));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc);
  }
  return acc;
}

template <bool kIsQ4>
void q8_interleaved_cols(const detail::MatmulTask& t, int64_t o_begin, int64_t o_end) {
  const int64_t nb = t.n_in / 32;
  thread_local Interleaved16 packed;
  packed.reserve(nb);
  constexpr int kR = 4;
  for (int64_t o = o_begin; o < o_end; o += 16) {
    const int64_t take = std::min<int64_t>(16, o_end - o);
    const uint8_t* cols[16];
    for (int j = 0; j < 16; ++j) cols[j] = t.w + (o + std::min<int64_t>(j, take - 1)) * t.w_row_bytes;
    const __mmask16 valid = static_cast<__mmask16>((1u << take) - 1);
    if (t.rows == 1) {
      _mm512_mask_storeu_ps(t.y + o, valid, row16_fused<kIsQ4>(cols, nb, t.xu, t.xd));
      continue;
    }
    pack16<kIsQ4>(cols, nb, packed);
    for (int64_t r = 0; r < t.rows;) {
      if (t.rows - r >= kR) {
        const uint8_t* xu[kR];
        const float* xd[kR];
        for (int i = 0; i < kR; ++i) {
          xu[i] = t.xu + (r + i) * t.n_in;
          xd[i] = t.xd + (r + i) * nb;
        }
        __m512 acc[kR];
        rows16<kR>(packed, nb, xu, xd, acc);
        for (int i = 0; i < kR; ++i) _mm512_mask_storeu_ps(t.y + (r + i) * t.y_stride + o, valid, acc[i]);
        r += kR;
      } else {
        const uint8_t* xu[1] = {t.xu + r * t.n_in};
        const float* xd[1] = {t.xd + r * nb};
        __m512 acc[1];
        rows16<1>(packed, nb, xu, xd, acc);
        _mm512_mask_storeu_ps(t.y + r * t.y_stride + o, valid, acc[0]);
        r += 1;
      }
    }
  }
}

}  // namespace ladder::ops::HWY_NAMESPACE
LADDER_TARGET_FEATURES_POP()
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_Q8_INTERLEAVED_INL_H_
