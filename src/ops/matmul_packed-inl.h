// Per-target (AVX3_DL only) kernels for weights packed once at load time
// (ops/packed_weights.h), compiled through matmul_simd.cc. The 16-column
// transpose that matmul_q8_interleaved-inl.h does on every call is done here
// once, so a decode step streams packed bytes straight into vpdpbusd.
//
// Per group of 16 output columns (a short last group repeats its last
// column), a run of 576-byte units: one 32-element block of Q8_0, or two of
// Q4_0 (an odd last block leaves the second half of its unit zero).
//   Q8_0 unit: [k 0..7][16 columns] 4 bytes   dword k of the block     512
//              [16] int16                     sum(w) of each column     32
//              [16] F16                       scales                    32
//   Q4_0 unit: per block j = 0, 1:
//              [m 0..3][16 columns] 4 bytes   dword m of q in the low
//                                             nibbles, dword m+4 high  256
//              [2][16] F16                    scales                    64
// That is 288 bytes per 16 x 32 Q4_0 weights, the size of Q4_0 itself. Units
// are whole cache lines, so no vector load straddles two lines.
//
// Per lane the arithmetic is the unpacked kernel's: the exact integer block
// dot product isum, then acc = fma(float(isum), dw * dx, acc) over the blocks
// in order, hence bit-identical results. Only the way isum is formed differs,
// and integer sums are exact whatever their order:
//   Q8_0: isum = sum(u * w) - 128 * sum(w)   u = xq + 128 the unsigned side;
//   Q4_0: isum = sum(q * xq) - 8 * sum(xq)   q = w + 8 in 0..15 the unsigned
//         side: a nibble needs only a mask (or a shift and a mask), and the
//         offset belongs to the activation block, so no per-column sums are
//         stored (matmul.cc passes sum(xq) per row and block).

#if defined(LADDER_OPS_MATMUL_PACKED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_PACKED_INL_H_
#undef LADDER_OPS_MATMUL_PACKED_INL_H_
#else
#define LADDER_OPS_MATMUL_PACKED_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/tensor_type.h"
#include "hwy/highway.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_q8_interleaved-inl.h"
#include "ops/matmul_simd.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
#pragma GCC target("avx512vnni")
namespace ladder::ops::HWY_NAMESPACE {

inline constexpr int64_t kUnitBytes = static_cast<int64_t>(detail::kPackedUnitBytes);
inline constexpr int kUnitLines = kUnitBytes / 64;
static_assert(kUnitBytes % 64 == 0, "packed units must be whole cache lines");

// One block of a unit in registers, shared by every row of a tile.
struct PackedBlock {
  __m512i w[8];  // dword k of the block for columns 0..15: Q8_0 w (signed), Q4_0 q = w + 8 (unsigned)
  __m512i bias;  // Q8_0: -128 * sum(w) per column
  __m512 dw;     // the 16 scales
};

// Gathers the 16 columns' block b as 8 transposed vectors of signed weights.
template <bool kIsQ4>
HWY_INLINE void transposed_block(const uint8_t* const* cols, int64_t b, __m512i* w) {
  __m512i z[8];
  for (int i = 0; i < 8; ++i) {
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(q32_block_s8<kIsQ4>(cols[i], b)),
                              q32_block_s8<kIsQ4>(cols[i + 8], b), 1);
  }
  transpose16x8(z, w);
}

struct PackedQ8_0 {
  static constexpr int kBlocks = 1;
  static constexpr bool kRowSums = false;

  // Activation bytes fed to vpdpbusd: u = q + 128, the unsigned side.
  static const uint8_t* acts(const detail::MatmulTask& t) { return t.xu; }

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t b = 0; b < nb; ++b, dst += kUnitBytes) {
      __m512i w[8];
      transposed_block<false>(cols, b, w);
      __m512i sum = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k) {
        _mm512_storeu_si512(dst + 64 * k, w[k]);
        sum = _mm512_dpbusd_epi32(sum, ones, w[k]);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 512), _mm512_cvtepi32_epi16(sum));
      auto* scales = reinterpret_cast<uint16_t*>(dst + 544);
      for (int j = 0; j < 16; ++j) scales[j] = q32_block_scale<false>(cols[j], b);
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int /*j*/, PackedBlock& blk) {
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_loadu_si512(unit + 64 * k);
    const __m512i sum =
        _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 512)));
    blk.bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7));
    blk.dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 544)));
  }

  static HWY_INLINE __m512i row_bias(const PackedBlock& blk, int32_t /*xq_sum*/) { return blk.bias; }

  static HWY_INLINE __m512i dot(__m512i acc, __m512i w, int32_t x4) {
    return _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(x4), w);
  }
};

struct PackedQ4_0 {
  static constexpr int kBlocks = 2;
  static constexpr bool kRowSums = true;

  // Activation bytes fed to vpdpbusd: q itself, the signed side.
  static const uint8_t* acts(const detail::MatmulTask& t) { return reinterpret_cast<const uint8_t*>(t.xq); }

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m512i eight = _mm512_set1_epi8(8);
    for (int64_t b0 = 0; b0 < nb; b0 += kBlocks, dst += kUnitBytes) {
      std::memset(dst, 0, static_cast<size_t>(kUnitBytes));
      for (int j = 0; j < kBlocks && b0 + j < nb; ++j) {
        __m512i w[8];
        transposed_block<true>(cols, b0 + j, w);
        // q < 16, so the 16-bit shift moves no bits across bytes.
        for (int m = 0; m < 4; ++m) {
          const __m512i lo = _mm512_add_epi8(w[m], eight);
          const __m512i hi = _mm512_add_epi8(w[m + 4], eight);
          _mm512_storeu_si512(dst + 256 * j + 64 * m, _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4)));
        }
        auto* scales = reinterpret_cast<uint16_t*>(dst + 512 + 32 * j);
        for (int c = 0; c < 16; ++c) scales[c] = q32_block_scale<true>(cols[c], b0 + j);
      }
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int j, PackedBlock& blk) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int m = 0; m < 4; ++m) {
      const __m512i v = _mm512_loadu_si512(unit + 256 * j + 64 * m);
      blk.w[m] = _mm512_and_si512(v, low4);
      blk.w[m + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    }
    blk.dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 512 + 32 * j)));
  }

  static HWY_INLINE __m512i row_bias(const PackedBlock&, int32_t xq_sum) {
    return _mm512_set1_epi32(-8 * xq_sum);
  }

  static HWY_INLINE __m512i dot(__m512i acc, __m512i w, int32_t x4) {
    return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(x4));
  }
};

template <class Fmt>
constexpr int64_t packed_group_bytes(int64_t nb) {
  return (nb + Fmt::kBlocks - 1) / Fmt::kBlocks * kUnitBytes;
}

template <class Fmt>
void pack_groups(const detail::MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  const int64_t nb = t.n_in / 32;
  const int64_t n_out = t.y_stride;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const int64_t o = g * 16;
    const int64_t take = std::min<int64_t>(16, n_out - o);
    const uint8_t* cols[16];
    for (int j = 0; j < 16; ++j) cols[j] = t.w + (o + std::min<int64_t>(j, take - 1)) * t.w_row_bytes;
    Fmt::pack(cols, nb, out + g * packed_group_bytes<Fmt>(nb));
  }
}

// R rows against one packed group. x: activation bytes (Fmt::acts), xd:
// block scales, xs: sum(xq) per block (read only by Q4_0).
// With `next` set, unit u of the group at `next` is prefetched into L2 while
// unit u of this one is computed, so memory latency hides behind the
// arithmetic of a batch (the group is then reused by every row tile).
// Decode (one row) instead streams a few units ahead of itself.
template <class Fmt, int R>
HWY_INLINE void packed_rows16(const uint8_t* grp, int64_t nb, const uint8_t* const* x, const float* const* xd,
                              const int32_t* const* xs, __m512* acc, const uint8_t* next) {
  constexpr int64_t kDecodeAhead = 8 * kUnitBytes;
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b0 = 0; b0 < nb; b0 += Fmt::kBlocks, grp += kUnitBytes) {
    if (next != nullptr) {
      for (int l = 0; l < kUnitLines; ++l) {
        _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T1);
      }
      next += kUnitBytes;
    } else if constexpr (R == 1) {
      for (int l = 0; l < kUnitLines; ++l) {
        _mm_prefetch(reinterpret_cast<const char*>(grp + kDecodeAhead + 64 * l), _MM_HINT_NTA);
      }
    }
    for (int j = 0; j < Fmt::kBlocks && b0 + j < nb; ++j) {
      const int64_t b = b0 + j;
      PackedBlock blk;
      Fmt::load(grp, j, blk);
      for (int i = 0; i < R; ++i) {
        const int32_t* x4 = reinterpret_cast<const int32_t*>(x[i] + b * 32);
        // Independent integer chains hide vpdpbusd latency; integer sums are
        // exact, so the split cannot change a bit.
        constexpr int kChains = R == 1 ? 4 : 2;
        __m512i ch[kChains];
        ch[0] = Fmt::row_bias(blk, Fmt::kRowSums ? xs[i][b] : 0);
        for (int c = 1; c < kChains; ++c) ch[c] = _mm512_setzero_si512();
        for (int k = 0; k < 8; ++k) ch[k % kChains] = Fmt::dot(ch[k % kChains], blk.w[k], x4[k]);
        __m512i s = ch[0];
        for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, ch[c]);
        const __m512 scale = _mm512_mul_ps(blk.dw, _mm512_set1_ps(xd[i][b]));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[i]);
      }
    }
  }
}

// Columns [o_begin, o_end) (o_begin a multiple of 16) from packed weights:
// row tiles of 4, then single rows.
template <class Fmt>
void packed_cols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                 int64_t o_end) {
  const int64_t nb = t.n_in / 32;
  const int64_t group_bytes = packed_group_bytes<Fmt>(nb);
  const uint8_t* acts = Fmt::acts(t);
  constexpr int kR = 4;
  for (int64_t o = o_begin; o < o_end; o += 16) {
    const int64_t take = std::min<int64_t>(16, o_end - o);
    const __mmask16 valid = static_cast<__mmask16>((1u << take) - 1);
    const uint8_t* grp = packed + (o / 16) * group_bytes;
    // A batch prefetches the next group during its first row tile.
    const uint8_t* next = (t.rows > 1 && o + 16 < o_end) ? grp + group_bytes : nullptr;
    for (int64_t r = 0; r < t.rows;) {
      const int n = t.rows - r >= kR ? kR : 1;
      const uint8_t* x[kR];
      const float* xd[kR];
      const int32_t* xs[kR];
      for (int i = 0; i < n; ++i) {
        x[i] = acts + (r + i) * t.n_in;
        xd[i] = t.xd + (r + i) * nb;
        xs[i] = Fmt::kRowSums ? xq_sums + (r + i) * nb : nullptr;
      }
      __m512 acc[kR];
      if (n == kR) {
        packed_rows16<Fmt, kR>(grp, nb, x, xd, xs, acc, r == 0 ? next : nullptr);
      } else {
        packed_rows16<Fmt, 1>(grp, nb, x, xd, xs, acc, r == 0 ? next : nullptr);
      }
      for (int i = 0; i < n; ++i) _mm512_mask_storeu_ps(t.y + (r + i) * t.y_stride + o, valid, acc[i]);
      r += n;
    }
  }
}

void PackGroups(const detail::MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  if (t.type == TensorType::kQ4_0) {
    pack_groups<PackedQ4_0>(t, g_begin, g_end, out);
  } else {
    pack_groups<PackedQ8_0>(t, g_begin, g_end, out);
  }
}

void MatmulPackedCols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums,
                      int64_t o_begin, int64_t o_end) {
  if (t.type == TensorType::kQ4_0) {
    packed_cols<PackedQ4_0>(t, packed, xq_sums, o_begin, o_end);
  } else {
    packed_cols<PackedQ8_0>(t, packed, xq_sums, o_begin, o_end);
  }
}

bool HasPacked(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#else  // !AVX3_DL: no packed kernels; ops/packed_weights.cc falls back.

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
void PackGroups(const detail::MatmulTask&, int64_t, int64_t, uint8_t*) {}
void MatmulPackedCols(const detail::MatmulTask&, const uint8_t*, const int32_t*, int64_t, int64_t) {}
bool HasPacked(TensorType) {
  return false;
}
}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // LADDER_OPS_MATMUL_PACKED_INL_H_
