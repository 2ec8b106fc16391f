// Per-target matmul kernels (the tiling driver and the integer kernels; the
// float ones are in matmul_float-inl.h), compiled once per Highway target through
// matmul_simd.cc. Every output y[r][o] is one dot product whose operation
// sequence (vector lanes, block order, final horizontal sum) depends only on
// n_in and the weight type, never on how many rows or columns a tile holds:
// a tile of R rows x C columns runs exactly the 1x1 computation R*C times,
// interleaved for register reuse. That is what makes matmul batch invariant.

#if defined(LADDER_OPS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_INL_H_
#undef LADDER_OPS_MATMUL_INL_H_
#else
#define LADDER_OPS_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/half.h"
#include "common/tensor_type.h"
#include "gguf/quant.h"
#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_q8_interleaved-inl.h"
#include "ops/q32_block-inl.h"

#undef LADDER_X86_INT8
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define LADDER_X86_INT8 1
#include <immintrin.h>
#else
#define LADDER_X86_INT8 0
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
// The CPUs AVX3_DL dispatches to (Ice Lake+, Zen 4) have AVX512-VNNI.
LADDER_TARGET_FEATURES_PUSH("avx512vnni")
#endif
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------------------
// Tiling driver shared by all kernels.

// Walks output columns [o_begin, o_end) in cache blocks of `col_block`
// columns; inside a block, rows in groups of kR (a lone last row uses the
// 1-row tile) and columns in groups of kC. A partial group repeats its last
// row/column and sends the surplus results to a dummy: tiles are always full,
// and the repeated work cannot change anyone's bits.
template <int kR, int kC, class Tile>
HWY_INLINE void drive_tiles(const detail::MatmulTask& t, int64_t o_begin, int64_t o_end, int64_t col_block,
                            const Tile& tile) {
  float dummy = 0.0f;
  for (int64_t ob = o_begin; ob < o_end; ob += col_block) {
    const int64_t oe = std::min(o_end, ob + col_block);
    for (int64_t r = 0; r < t.rows;) {
      const int64_t take_r = std::min<int64_t>(kR, t.rows - r);
      for (int64_t o = ob; o < oe; o += kC) {
        const int64_t take_c = std::min<int64_t>(kC, oe - o);
        int64_t o_idx[kC];
        for (int c = 0; c < kC; ++c) o_idx[c] = o + std::min<int64_t>(c, take_c - 1);
        if (take_r == 1) {
          int64_t r_idx[1] = {r};
          float* out[kC];
          for (int c = 0; c < kC; ++c) out[c] = c < take_c ? &t.y[r * t.y_stride + o + c] : &dummy;
          tile.template run<1>(r_idx, o_idx, out);
        } else {
          int64_t r_idx[kR];
          float* out[kR * kC];
          for (int i = 0; i < kR; ++i) {
            r_idx[i] = r + std::min<int64_t>(i, take_r - 1);
            for (int c = 0; c < kC; ++c) {
              out[i * kC + c] = (i < take_r && c < take_c) ? &t.y[(r + i) * t.y_stride + o + c] : &dummy;
            }
          }
          tile.template run<kR>(r_idx, o_idx, out);
        }
      }
      r += take_r;
    }
  }
}

// Columns per cache block: about 256 KiB of weights, a multiple of kC.
template <int kC>
HWY_INLINE int64_t col_block_for(size_t row_bytes) {
  int64_t cols = static_cast<int64_t>((256u << 10) / std::max<size_t>(row_bytes, 1));
  cols = std::max<int64_t>(kC, cols / kC * kC);
  return cols;
}

// Exported: detail::quantize_activations with vectors; the same results bit
// for bit (round to nearest even, clamp to +-127).
void QuantizeActivations(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                         float* xsum) {
  using DF = hn::ScalableTag<float>;
  const DF d;
  const hn::Rebind<int32_t, DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const hn::Rebind<uint8_t, DF> du8;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t nb = n_in / detail::kActBlock;
  const auto lim = hn::Set(d, 127.0f);
  const auto k128 = hn::Set(di, 128);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t off = r * n_in + b * detail::kActBlock;
      const float* v = x + off;
      auto vmax = hn::Zero(d);
      for (int64_t j = 0; j < detail::kActBlock; j += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(d, v + j)));
      const float amax = hn::GetLane(hn::MaxOfLanes(d, vmax));
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      const auto vid = hn::Set(d, id);
      auto isum = hn::Zero(di);
      for (int64_t j = 0; j < detail::kActBlock; j += N) {
        const auto s = hn::Min(hn::Max(hn::Mul(hn::LoadU(d, v + j), vid), hn::Neg(lim)), lim);
        const auto qi = hn::NearestInt(s);
        isum = hn::Add(isum, qi);
        hn::StoreU(hn::DemoteTo(d8, qi), d8, xq + off + j);
        hn::StoreU(hn::DemoteTo(du8, hn::Add(qi, k128)), du8, xu + off + j);
      }
      const float dsc = amax / 127.0f;
      xd[r * nb + b] = dsc;
      xsum[r * nb + b] = dsc * static_cast<float>(hn::GetLane(hn::SumOfLanes(di, isum)));
    }
  }
}

// Exported: the target this code was compiled for (what dispatch picked).
int64_t DispatchedTarget() {
  return HWY_TARGET;
}

// ---------------------------------------------------------------------------
// Integer kernels (x86 only): weights as int8 against activations quantized
// to int8 per 32 elements. Each 32-element block gives 8 int32 lanes (lane i
// = bytes 4i..4i+3), converted to float and scaled into 8 float lanes.

#if LADDER_X86_INT8

// lane i = sum_{j=4i..4i+3} u[j] * s[j], u unsigned, s signed.
HWY_INLINE __m256i dot_us(__m256i u, __m256i s) {
#if HWY_TARGET == HWY_AVX3_DL
  // EVEX AVX512-VNNI: Highway's AVX3_DL flags also enable AVX-VNNI, whose VEX
  // encoding the compiler would pick for the intrinsic and that Zen 4 lacks.
  __m256i acc = _mm256_setzero_si256();
  asm("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
#else
  // |u| <= 128 and |s| <= 127 keep maddubs' int16 pair sums from saturating.
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

HWY_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HWY_INLINE void set_zero(__m256& v) { v = _mm256_setzero_ps(); }

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
HWY_INLINE float hsum(__m512 v) {
  return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

HWY_INLINE void set_zero(__m512& v) { v = _mm512_setzero_ps(); }
#endif

HWY_INLINE float half_to_f32(uint16_t h) {
  return _cvtsh_ss(h);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr int kQ8Cols = 4;
inline constexpr int kKCols = 2;
#else
inline constexpr int kQ8Cols = 2;
inline constexpr int kKCols = 1;
#endif
inline constexpr int kIntRows = 4;

// Row pointers of an integer tile: quantized activations, their per-32
// block scales and (for the min term of Q4_K) block sums.
template <int R>
struct IntRows {
  const int8_t* xq[R];
  const float* xd[R];
  const float* xs[R];

  HWY_INLINE IntRows(const detail::MatmulTask& t, const int64_t* r_idx) {
    const int64_t nb32 = t.n_in / 32;
    for (int i = 0; i < R; ++i) {
      xq[i] = t.xq + r_idx[i] * t.n_in;
      xd[i] = t.xd + r_idx[i] * nb32;
      xs[i] = t.xsum + r_idx[i] * nb32;
    }
  }
};

// The weight rows of a tile's C columns, as arrays of `Block`.
template <class Block, int C>
HWY_INLINE void bind_cols(const detail::MatmulTask& t, const int64_t* o_idx, const Block** wc) {
  for (int c = 0; c < C; ++c) wc[c] = reinterpret_cast<const Block*>(t.w + o_idx[c] * t.w_row_bytes);
}

// R x C float accumulators of one tile (256- or 512-bit lanes), zeroed, and
// written out as horizontal sums.
template <class V, int R, int C>
struct TileAcc {
  V v[R][C];

  HWY_INLINE TileAcc() {
    for (int i = 0; i < R; ++i)
      for (int c = 0; c < C; ++c) set_zero(v[i][c]);
  }
  HWY_INLINE void store(float* const* out) const {
    for (int i = 0; i < R; ++i)
      for (int c = 0; c < C; ++c) *out[i * C + c] = hsum(v[i][c]);
  }
};

// One 32-element block of a Q8_0 or Q4_0 row as 32 signed bytes, and its scale.
template <bool kIsQ4>
HWY_INLINE __m256i q32_block(const uint8_t* row, int64_t b, float* d) {
  *d = half_to_f32(q32_block_scale<kIsQ4>(row, b));
  return q32_block_s8<kIsQ4>(row, b);
}

// Q8_0 and Q4_0: one scale per 32 signed weights. Signed x signed products
// via |w| (unsigned) times x carrying w's sign.
template <bool kIsQ4>
struct Q32Tile {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kQ8Cols;
    const int64_t nb = t.n_in / 32;
    const IntRows<R> x(t, r_idx);
    const uint8_t* wc[C];
    bind_cols<uint8_t, C>(t, o_idx, wc);
    TileAcc<__m256, R, C> acc;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i ws[C], wa[C];
      float dw[C];
      for (int c = 0; c < C; ++c) {
        ws[c] = q32_block<kIsQ4>(wc[c], b, &dw[c]);
        wa[c] = _mm256_sign_epi8(ws[c], ws[c]);
      }
      for (int i = 0; i < R; ++i) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq[i] + b * 32));
        const float dx = x.xd[i][b];
        for (int c = 0; c < C; ++c) {
          const __m256i isum = dot_us(wa[c], _mm256_sign_epi8(xv, ws[c]));
          acc.v[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dw[c] * dx), acc.v[i][c]);
        }
      }
    }
    acc.store(out);
  }
};

// d * sc_j and -dmin * m_j of the 8 sub-blocks of a Q4_K super-block.
HWY_INLINE void q4k_scales(const BlockQ4_K& blk, float* dsc, float* negmin) {
  const float d = half_to_f32(blk.d);
  const float dmin = half_to_f32(blk.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    gguf::k_scale_min(j, blk.scales, &sc, &m);
    dsc[j] = d * static_cast<float>(sc);
    negmin[j] = -(dmin * static_cast<float>(m));
  }
}

// Q4_K: w = d*sc_j*q - dmin*m_j per 32-element sub-block j, q in [0, 15].
// The min term joins the same 8 float lanes: lane j += -dmin*m_j * sum(x_j).
struct Q4KTile {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kKCols;
    const int64_t nsb = t.n_in / kQK_K;
    const IntRows<R> x(t, r_idx);
    const BlockQ4_K* wc[C];
    bind_cols<BlockQ4_K, C>(t, o_idx, wc);
    TileAcc<__m256, R, C> acc;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      alignas(32) float dsc[C][8];
      __m256 negmin[C];
      for (int c = 0; c < C; ++c) {
        alignas(32) float mins[8];
        q4k_scales(wc[c][sb], dsc[c], mins);
        negmin[c] = _mm256_load_ps(mins);
      }
      for (int i = 0; i < R; ++i) {
        const __m256 xsum = _mm256_loadu_ps(x.xs[i] + sb * 8);
        for (int c = 0; c < C; ++c) acc.v[i][c] = _mm256_fmadd_ps(negmin[c], xsum, acc.v[i][c]);
      }
      for (int k = 0; k < 4; ++k) {
        __m256i lo[C], hi[C];
        for (int c = 0; c < C; ++c) {
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wc[c][sb].qs + 32 * k));
          lo[c] = _mm256_and_si256(q, low4);
          hi[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        }
        const int64_t j0 = sb * 8 + 2 * k;
        for (int i = 0; i < R; ++i) {
          const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq[i] + j0 * 32));
          const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq[i] + j0 * 32 + 32));
          const float dx0 = x.xd[i][j0];
          const float dx1 = x.xd[i][j0 + 1];
          for (int c = 0; c < C; ++c) {
            acc.v[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_us(lo[c], x0)),
                                          _mm256_set1_ps(dsc[c][2 * k] * dx0), acc.v[i][c]);
            acc.v[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_us(hi[c], x1)),
                                          _mm256_set1_ps(dsc[c][2 * k + 1] * dx1), acc.v[i][c]);
          }
        }
      }
    }
    acc.store(out);
  }
};

// Q6_K: w = d * sc_g * (q - 32) with one int8 scale per 16 elements, q in
// [0, 63] split into 4 low bits (ql) and 2 high bits (qh). Lanes 0-3 of a
// 32-element sub-block hold its first 16 elements, lanes 4-7 the second.
struct Q6KTile {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kKCols;
    const int64_t nsb = t.n_in / kQK_K;
    const IntRows<R> x(t, r_idx);
    const BlockQ6_K* wc[C];
    bind_cols<BlockQ6_K, C>(t, o_idx, wc);
    TileAcc<__m256, R, C> acc;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    const __m256i k32 = _mm256_set1_epi8(32);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      for (int half = 0; half < 2; ++half) {
        for (int s = 0; s < 4; ++s) {
          __m256i ws[C], wa[C];
          __m256 scv[C];
          for (int c = 0; c < C; ++c) {
            const BlockQ6_K& blk = wc[c][sb];
            const uint8_t* ql = blk.ql + 64 * half + (s & 1) * 32;
            const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * half));
            const __m256i lq =
                s < 2 ? _mm256_and_si256(l, low4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
            __m256i hq;
            switch (s) {
              case 0: hq = _mm256_slli_epi16(h, 4); break;
              case 1: hq = _mm256_slli_epi16(h, 2); break;
              case 2: hq = h; break;
              default: hq = _mm256_srli_epi16(h, 2); break;
            }
            ws[c] = _mm256_sub_epi8(_mm256_or_si256(lq, _mm256_and_si256(hq, bits45)), k32);
            wa[c] = _mm256_sign_epi8(ws[c], ws[c]);
            const float d = half_to_f32(blk.d);
            const int g = 8 * half + 2 * s;  // scale index of the first 16 elements
            scv[c] = _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(blk.scales[g + 1])),
                                     _mm_set1_ps(d * static_cast<float>(blk.scales[g])));
          }
          const int64_t j = sb * 8 + half * 4 + s;  // 32-element block of x
          for (int i = 0; i < R; ++i) {
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq[i] + j * 32));
            const __m256 dx = _mm256_set1_ps(x.xd[i][j]);
            for (int c = 0; c < C; ++c) {
              const __m256i isum = dot_us(wa[c], _mm256_sign_epi8(xv, ws[c]));
              acc.v[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(scv[c], dx), acc.v[i][c]);
            }
          }
        }
      }
    }
    acc.store(out);
  }
};

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// AVX-512: two 32-element blocks per 512-bit vector (16 int32 lanes: lanes
// 0-7 the first block, 8-15 the second). An odd last block fills the low
// half and leaves zero weights and scales in the high half.

HWY_INLINE __m512i dot_us512(__m512i u, __m512i s) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
#else
  return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
#endif
}


// [a x8 | b x8]
HWY_INLINE __m512 two_halves(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

HWY_INLINE __m512i join256(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// x * sign(w) for the lanes where w < 0 (AVX-512 has no vpsignb).
HWY_INLINE __m512i apply_sign(__m512i x, __mmask64 neg) {
  return _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
}

template <bool kIsQ4>
struct Q32Tile512 {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kQ8Cols;
    const int64_t nb = t.n_in / 32;
    const IntRows<R> x(t, r_idx);
    const uint8_t* wc[C];
    bind_cols<uint8_t, C>(t, o_idx, wc);
    TileAcc<__m512, R, C> acc;
    for (int64_t b = 0; b < nb; b += 2) {
      const bool pair = b + 1 < nb;
      __m512i wa[C];
      __mmask64 neg[C];
      __m512 dw[C];
      for (int c = 0; c < C; ++c) {
        float d0 = 0.0f, d1 = 0.0f;
        const __m256i w0 = q32_block<kIsQ4>(wc[c], b, &d0);
        const __m256i w1 = pair ? q32_block<kIsQ4>(wc[c], b + 1, &d1) : _mm256_setzero_si256();
        const __m512i ws = join256(w0, w1);
        wa[c] = _mm512_abs_epi8(ws);
        neg[c] = _mm512_movepi8_mask(ws);
        dw[c] = two_halves(d0, d1);
      }
      for (int i = 0; i < R; ++i) {
        const __m512i xv = pair ? _mm512_loadu_si512(x.xq[i] + b * 32)
                                : _mm512_zextsi256_si512(
                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.xq[i] + b * 32)));
        const __m512 dx = two_halves(x.xd[i][b], pair ? x.xd[i][b + 1] : 0.0f);
        for (int c = 0; c < C; ++c) {
          const __m512i isum = dot_us512(wa[c], apply_sign(xv, neg[c]));
          acc.v[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[c], dx), acc.v[i][c]);
        }
      }
    }
    acc.store(out);
  }
};

// Q4_K: sub-blocks 2k (low nibbles of qs[32k..32k+32)) and 2k+1 (high
// nibbles) cover 64 consecutive elements: one vector. Unsigned q needs no
// sign trick; the min term goes into the low 8 lanes, one per sub-block.
struct Q4KTile512 {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kKCols;
    const int64_t nsb = t.n_in / kQK_K;
    const IntRows<R> x(t, r_idx);
    const BlockQ4_K* wc[C];
    bind_cols<BlockQ4_K, C>(t, o_idx, wc);
    TileAcc<__m512, R, C> acc;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      alignas(32) float dsc[C][8];
      __m512 negmin[C];
      for (int c = 0; c < C; ++c) {
        alignas(32) float mins[8];
        q4k_scales(wc[c][sb], dsc[c], mins);
        negmin[c] = _mm512_zextps256_ps512(_mm256_load_ps(mins));
      }
      for (int i = 0; i < R; ++i) {
        const __m512 xsum = _mm512_zextps256_ps512(_mm256_loadu_ps(x.xs[i] + sb * 8));
        for (int c = 0; c < C; ++c) acc.v[i][c] = _mm512_fmadd_ps(negmin[c], xsum, acc.v[i][c]);
      }
      for (int k = 0; k < 4; ++k) {
        __m512i qv[C];
        __m512 scv[C];
        for (int c = 0; c < C; ++c) {
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wc[c][sb].qs + 32 * k));
          qv[c] = join256(_mm256_and_si256(q, low4), _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
          scv[c] = two_halves(dsc[c][2 * k], dsc[c][2 * k + 1]);
        }
        const int64_t j0 = sb * 8 + 2 * k;
        for (int i = 0; i < R; ++i) {
          const __m512i xv = _mm512_loadu_si512(x.xq[i] + j0 * 32);
          const __m512 dx = two_halves(x.xd[i][j0], x.xd[i][j0 + 1]);
          for (int c = 0; c < C; ++c) {
            acc.v[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_us512(qv[c], xv)), _mm512_mul_ps(scv[c], dx),
                                          acc.v[i][c]);
          }
        }
      }
    }
    acc.store(out);
  }
};

// Q6_K: per 128-element half, sub-blocks (0,1) are the low nibbles of
// ql[0..64) with qh bits 0-1 / 2-3, and (2,3) the high nibbles with qh bits
// 4-5 / 6-7: each pair is 64 consecutive elements, one vector, with four
// 16-element scales (lanes 0-3, 4-7, 8-11, 12-15).
struct Q6KTile512 {
  const detail::MatmulTask& t;

  template <int R>
  HWY_INLINE void run(const int64_t* r_idx, const int64_t* o_idx, float* const* out) const {
    constexpr int C = kKCols;
    const int64_t nsb = t.n_in / kQK_K;
    const IntRows<R> x(t, r_idx);
    const BlockQ6_K* wc[C];
    bind_cols<BlockQ6_K, C>(t, o_idx, wc);
    TileAcc<__m512, R, C> acc;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    const __m512i k32 = _mm512_set1_epi8(32);
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    for (int64_t sb = 0; sb < nsb; ++sb) {
      for (int half = 0; half < 2; ++half) {
        for (int pp = 0; pp < 2; ++pp) {
          __m512i wa[C];
          __mmask64 neg[C];
          __m512 scv[C];
          for (int c = 0; c < C; ++c) {
            const BlockQ6_K& blk = wc[c][sb];
            const __m512i l = _mm512_loadu_si512(blk.ql + 64 * half);
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * half));
            __m512i lq, hq;
            if (pp == 0) {
              lq = _mm512_and_si512(l, low4);
              hq = join256(_mm256_and_si256(_mm256_slli_epi16(h, 4), bits45),
                           _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
            } else {
              lq = _mm512_and_si512(_mm512_srli_epi16(l, 4), low4);
              hq = join256(_mm256_and_si256(h, bits45), _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
            }
            const __m512i ws = _mm512_sub_epi8(_mm512_or_si512(lq, hq), k32);
            wa[c] = _mm512_abs_epi8(ws);
            neg[c] = _mm512_movepi8_mask(ws);
            const float d = half_to_f32(blk.d);
            const int g = 8 * half + 4 * pp;  // scale of the first 16 elements
            const __m128 s4 = _mm_mul_ps(_mm_set1_ps(d), _mm_setr_ps(blk.scales[g], blk.scales[g + 1],
                                                                     blk.scales[g + 2], blk.scales[g + 3]));
            scv[c] = _mm512_permutexvar_ps(quad, _mm512_castps128_ps512(s4));
          }
          const int64_t j = sb * 8 + half * 4 + 2 * pp;  // first 32-element block of x
          for (int i = 0; i < R; ++i) {
            const __m512i xv = _mm512_loadu_si512(x.xq[i] + j * 32);
            const __m512 dx = two_halves(x.xd[i][j], x.xd[i][j + 1]);
            for (int c = 0; c < C; ++c) {
              const __m512i isum = dot_us512(wa[c], apply_sign(xv, neg[c]));
              acc.v[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(scv[c], dx), acc.v[i][c]);
            }
          }
        }
      }
    }
    acc.store(out);
  }
};

template <bool kIsQ4>
using Q32TileBest = Q32Tile512<kIsQ4>;
using Q4KTileBest = Q4KTile512;
using Q6KTileBest = Q6KTile512;
#else
template <bool kIsQ4>
using Q32TileBest = Q32Tile<kIsQ4>;
using Q4KTileBest = Q4KTile;
using Q6KTileBest = Q6KTile;
#endif  // AVX3 / AVX3_DL

bool HasIntKernels() {
  return true;
}

// Exported: Q8_0/Q4_0/Q4_K/Q6_K weights against quantized activations.
void MatmulIntCols(const detail::MatmulTask& t, int64_t o_begin, int64_t o_end) {
  switch (t.type) {
    case TensorType::kQ8_0: {
#if HWY_TARGET == HWY_AVX3_DL
      q8_interleaved_cols<false>(t, o_begin, o_end);
      break;
#endif
      Q32TileBest<false> tile{t};
      drive_tiles<kIntRows, kQ8Cols>(t, o_begin, o_end, col_block_for<kQ8Cols>(t.w_row_bytes), tile);
      break;
    }
    case TensorType::kQ4_0: {
#if HWY_TARGET == HWY_AVX3_DL
      q8_interleaved_cols<true>(t, o_begin, o_end);
      break;
#endif
      Q32TileBest<true> tile{t};
      drive_tiles<kIntRows, kQ8Cols>(t, o_begin, o_end, col_block_for<kQ8Cols>(t.w_row_bytes), tile);
      break;
    }
    case TensorType::kQ4_K: {
      Q4KTileBest tile{t};
      drive_tiles<kIntRows, kKCols>(t, o_begin, o_end, col_block_for<kKCols>(t.w_row_bytes), tile);
      break;
    }
    default: {  // kQ6_K
      Q6KTileBest tile{t};
      drive_tiles<kIntRows, kKCols>(t, o_begin, o_end, col_block_for<kKCols>(t.w_row_bytes), tile);
      break;
    }
  }
}

#else  // !LADDER_X86_INT8: matmul.cc dequantizes rows and uses the float kernels.

bool HasIntKernels() {
  return false;
}
void MatmulIntCols(const detail::MatmulTask&, int64_t, int64_t) {}

#endif  // LADDER_X86_INT8

}  // namespace ladder::ops::HWY_NAMESPACE
#if HWY_TARGET == HWY_AVX3_DL
LADDER_TARGET_FEATURES_POP()
#endif
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_MATMUL_INL_H_
