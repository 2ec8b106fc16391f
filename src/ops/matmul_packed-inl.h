// Per-target (AVX3_DL only) kernels for weights packed once at load time
// (ops/packed_weights.h), compiled through matmul_simd.cc. The 16-column
// transpose that matmul_q8_interleaved-inl.h does on every call is done here
// once, so a decode step streams packed bytes straight into vpdpbusd.
//
// Per group of 16 output columns (a short last group repeats its last
// column), a run of units (sizes in matmul_simd.h). Throughout, "dword k" of
// a 32-element block is its elements 4k..4k+3 for the 16 columns, stored as
// [16 columns] 4 bytes: one vector, which vpdpbusd multiplies by 4
// activation bytes broadcast to every lane.
//   Q8_0 unit, blocks j = 0, 1 (an odd last block leaves j = 1 zero):
//     [j][k 0..7][16] 4 bytes   dword k of w + 128 (unsigned)            1024
//     [j][16] F16               scales                                     64
//   Q4_0 unit, blocks j = 0, 1 (an odd last block leaves j = 1 zero):
//     [j][m 0..3][16] 4 bytes   q = w + 8: dword m in the low nibbles,
//                               dword m+4 in the high ones                512
//     [j][16] F16               scales                                     64
//   Q4_K unit, one 256-element super-block, sub-blocks j = 0..7:
//     [j][m 0..3][16] 4 bytes   q in 0..15, nibbles as Q4_0              2048
//     [j][16] u8                6-bit scale sc_j                          128
//     [j][16] u8                6-bit min m_j                             128
//     [16] F16, [16] F16        d, dmin                                    64
//   Q5_K unit, one super-block:
//     [j][m 0..3][16] 4 bytes   low 4 bits of q in 0..31, as Q4_0        2048
//     [j][16] 4 bytes           bit 4 of dword k at bit k                  512
//     [j][16] u8, [j][16] u8    sc_j, m_j as Q4_K                          256
//     [16] F16, [16] F16        d, dmin                                    64
//   Q6_K unit, one super-block:
//     [j][m 0..3][16] 4 bytes   low 4 bits of q in 0..63, as Q4_0        2048
//     [j][p 0..1][16] 4 bytes   high 2 bits of dword 4p+e at bits 2e     1024
//     [g 0..15][16] int8        scale of elements 16g..16g+15             256
//     [16] F32                  d                                          64
// Per 16 columns x 256 weights: Q8_0 4352 bytes and Q4_0 2304 (their own
// sizes), Q4_K 2368 (its own 2304 + 2.8%), Q5_K 2880 (its own 2816 + 2.3%),
// Q6_K 3392 (its own 3360 + 1%).
// Units are whole cache lines, so no vector load straddles two lines.
//
// Q8_0 and Q4_0 lanes do the unpacked kernel's arithmetic: the exact integer
// block dot product isum, then acc = fma(float(isum), dw * dx, acc) over the
// blocks in order, hence bit-identical results. Only the way isum is formed
// differs, and integer sums are exact whatever their order:
//   Q8_0: isum = sum(q * xq) - 128 * sum(xq)  q = w + 128 the unsigned side;
//   Q4_0: isum = sum(q * xq) - 8 * sum(xq)    q = w + 8 in 0..15 the unsigned
//         side: a nibble needs only a mask (or a shift and a mask).
//   Either way the offset belongs to the activation block, so no per-column
//   sums are stored (matmul.cc passes sum(xq) per row and block).
// Q4_K, Q5_K and Q6_K lanes follow a chain of their own, fixed by n_in alone
// (so batch invariant), but not the unpacked kernels' (those spread a column
// over 8 or 16 lanes and add them up at the end; Q5_K has none and
// dequantizes): they agree with them only within rounding. Per 32-element
// sub-block j, in order:
//   Q4_K: acc = fma(float(sum(q * xq)), d*sc_j * dx, acc)
//         acc = fma(-dmin*m_j, dx * sum(xq), acc)   (MatmulTask::xsum)
//   Q5_K: the same, q in 0..31 (the low nibble and the qh bit joined in
//         registers; at most 32 * 31 * 127 per lane, far from overflow).
//   Q6_K: per 16-element half h (one scale each),
//         acc = fma(float(sum(q * xq) - 32 * sum(xq)), d*sc_h * dx, acc)
//         q in 0..63 the unsigned side; matmul.cc passes sum(xq) per 16.
// d*sc and dmin*m are products of an F16 and a small integer, exact in F32,
// so these factors equal the reference dequantizer's; storing sc and m as
// bytes instead of precomputed floats is what keeps the layouts near the
// formats' own size (decode is bound by the bytes streamed).

#if defined(LADDER_OPS_MATMUL_PACKED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_MATMUL_PACKED_INL_H_
#undef LADDER_OPS_MATMUL_PACKED_INL_H_
#else
#define LADDER_OPS_MATMUL_PACKED_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/half.h"
#include "common/tensor_type.h"
#include "gguf/quant.h"  // k_scale_min
#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/matmul-inl.h"
#include "ops/matmul_internal.h"
#include "ops/matmul_q8_interleaved-inl.h"
#include "ops/matmul_simd.h"

#if HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
LADDER_TARGET_FEATURES_PUSH("avx512vnni")
namespace ladder::ops::HWY_NAMESPACE {

// One 32-element block of a unit in registers, shared by every row of a tile.
struct PackedBlock {
  __m512i w[8];   // dword k for columns 0..15, unsigned (Q8_0: w + 128; the others: q)
  __m512 dw;      // per-column scale (Q4_K, Q5_K d*sc_j; Q6_K d*sc of elements 0..15)
  __m512 dw_hi;   // Q6_K: d*sc of elements 16..31
  __m512 negmin;  // Q4_K, Q5_K: -dmin*m_j
};

// One activation row as the packed kernels read it.
struct PackedRow {
  const uint8_t* x;   // [n_in] bytes fed to vpdpbusd (Fmt::acts)
  const float* xd;    // [n_in / 32] block scales dx
  const int32_t* xs;  // sum(xq) per Fmt::kSumGroup elements; null when 0
  const float* xsum;  // [n_in / 32] dx * sum(xq)
};

HWY_INLINE const int32_t* row_dwords(const PackedRow& row, int64_t b) {
  return reinterpret_cast<const int32_t*>(row.x + b * 32);
}

// init + the kN dword products of Fmt::dot, in kChains independent chains
// that hide vpdpbusd latency; integer sums are exact, so the split cannot
// change a bit.
template <class Fmt, int kN, int kChains>
HWY_INLINE __m512i dword_sum(__m512i init, const __m512i* w, const int32_t* x4) {
  constexpr int kC = kChains < kN ? kChains : kN;
  __m512i ch[kC];
  ch[0] = init;
  for (int c = 1; c < kC; ++c) ch[c] = _mm512_setzero_si512();
  for (int k = 0; k < kN; ++k) ch[k % kC] = Fmt::dot(ch[k % kC], w[k], x4[k]);
  __m512i s = ch[0];
  for (int c = 1; c < kC; ++c) s = _mm512_add_epi32(s, ch[c]);
  return s;
}

// Weights are the unsigned side of vpdpbusd, activations q (signed) the other.
struct UnsignedWeights {
  static const uint8_t* acts(const detail::MatmulTask& t) { return reinterpret_cast<const uint8_t*>(t.xq); }

  static HWY_INLINE __m512i dot(__m512i acc, __m512i w, int32_t x4) {
    return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(x4));
  }

  // AMX tiles (matmul_amx-inl.h) multiply these unsigned weights too
  // (tdpbsud) unless a format offers them signed (kAmxSigned).
  static constexpr bool kAmxSigned = false;
};

// Every format's step splits in two: the exact integer dot products of a
// block with the row's xq (Fmt::kDots of them: one per scale; they may come
// from vpdpbusd here or from AMX tiles, matmul_amx-inl.h, and are the same
// integers either way), then Fmt::finish, the float epilogue, which alone
// decides the bits of the result.

// acc + float(isum) * (dw * dx) for the exact integer dot product isum.
HWY_INLINE __m512 q32_scale_add(const PackedBlock& blk, float dx, __m512i isum, __m512 acc) {
  const __m512 scale = _mm512_mul_ps(blk.dw, _mm512_set1_ps(dx));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc);
}

// The same for block b of Q8_0 or Q4_0 from the vpdpbusd sum, whose offset
// Fmt::exact_sum removes.
template <class Fmt>
HWY_INLINE __m512 q32_finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                             __m512 acc) {
  return q32_scale_add(blk, row.xd[b], Fmt::exact_sum(dot[0], row, b), acc);
}

template <class Fmt, int kChains>
HWY_INLINE __m512 q32_step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
  const __m512i dot = dword_sum<Fmt, 8, kChains>(Fmt::vnni_init(blk), blk.w, row_dwords(row, b));
  return q32_finish<Fmt>(blk, row, b, &dot, acc);
}

// Four vectors of nibble pairs at p: w[m] = low nibbles, w[m + 4] = high.
HWY_INLINE void load_nibbles(const uint8_t* p, __m512i* w) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int m = 0; m < 4; ++m) {
    const __m512i v = _mm512_loadu_si512(p + 64 * m);
    w[m] = _mm512_and_si512(v, low4);
    w[m + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  }
}

// 16 bytes (unsigned or signed) or 16 F16 at p as 16 floats.
HWY_INLINE __m512 u8x16_to_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
HWY_INLINE __m512 i8x16_to_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
HWY_INLINE __m512 f16x16_to_ps(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

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

// The same for any format: col(c) gives column c's 32 values of the block.
template <class ColBlock>
HWY_INLINE void transposed_values(const ColBlock& col, __m512i* w) {
  __m512i z[8];
  for (int i = 0; i < 8; ++i) z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(col(i)), col(i + 8), 1);
  transpose16x8(z, w);
}

// Stores w[m] | w[m + 4] << 4 (m = 0..3; values below 16, so the 16-bit
// shift moves no bits across bytes): the nibble pairs load_nibbles reads.
HWY_INLINE void store_nibbles(const __m512i* w, uint8_t* dst) {
  for (int m = 0; m < 4; ++m) {
    _mm512_storeu_si512(dst + 64 * m, _mm512_or_si512(w[m], _mm512_slli_epi16(w[m + 4], 4)));
  }
}

struct PackedQ8_0 : UnsignedWeights {
  static constexpr TensorType kType = TensorType::kQ8_0;
  static constexpr int kBlocks = 2;
  static constexpr int64_t kUnitBytes = 1088;
  static constexpr int kSumGroup = 32;

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int64_t b0 = 0; b0 < nb; b0 += kBlocks, dst += kUnitBytes) {
      std::memset(dst, 0, static_cast<size_t>(kUnitBytes));
      for (int j = 0; j < kBlocks && b0 + j < nb; ++j) {
        __m512i w[8];
        transposed_block<false>(cols, b0 + j, w);
        // w + 128 (flipping the sign bit): the unsigned side of vpdpbusd.
        for (int k = 0; k < 8; ++k) _mm512_storeu_si512(dst + 512 * j + 64 * k, _mm512_xor_si512(w[k], c128));
        auto* scales = reinterpret_cast<uint16_t*>(dst + 1024 + 32 * j);
        for (int c = 0; c < 16; ++c) scales[c] = q32_block_scale<false>(cols[c], b0 + j);
      }
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int j, PackedBlock& blk) {
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_loadu_si512(unit + 512 * j + 64 * k);
    blk.dw = f16x16_to_ps(unit + 1024 + 32 * j);
  }

  // sum((w + 128) * xq) - 128 * sum(xq) = sum(w * xq): the offset belongs to
  // the activation block (matmul.cc passes sum(xq) per row and block).
  static HWY_INLINE __m512i vnni_init(const PackedBlock&) { return _mm512_setzero_si512(); }
  static HWY_INLINE __m512i exact_sum(__m512i dot, const PackedRow& row, int64_t b) {
    return _mm512_add_epi32(dot, _mm512_set1_epi32(-128 * row.xs[b]));
  }

  static HWY_INLINE __m512 finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                                  __m512 acc) {
    return q32_finish<PackedQ8_0>(blk, row, b, dot, acc);
  }

  // For AMX: the weights back to signed w (tdpbssd), whose tile product is
  // the exact dot product itself, and the epilogue of q32_finish without
  // the offset (same integer, same float operations, same bits), given the
  // row's block scale dx.
  static constexpr bool kAmxSigned = true;
  static HWY_INLINE void to_signed(PackedBlock& blk) {
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_xor_si512(blk.w[k], _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static HWY_INLINE __m512 finish_tile(const PackedBlock& blk, float dx, float, const __m512i* exact, __m512 acc) {
    return q32_scale_add(blk, dx, exact[0], acc);
  }

  template <int kChains>
  static HWY_INLINE __m512 step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
    return q32_step<PackedQ8_0, kChains>(blk, row, b, acc);
  }
};

struct PackedQ4_0 : UnsignedWeights {
  static constexpr TensorType kType = TensorType::kQ4_0;
  static constexpr int kBlocks = 2;
  static constexpr int64_t kUnitBytes = 576;
  static constexpr int kSumGroup = 32;

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
    load_nibbles(unit + 256 * j, blk.w);
    blk.dw = f16x16_to_ps(unit + 512 + 32 * j);
  }

  static HWY_INLINE __m512i vnni_init(const PackedBlock&) { return _mm512_setzero_si512(); }
  static HWY_INLINE __m512i exact_sum(__m512i dot, const PackedRow& row, int64_t b) {
    return _mm512_add_epi32(dot, _mm512_set1_epi32(-8 * row.xs[b]));
  }

  static HWY_INLINE __m512 finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                                  __m512 acc) {
    return q32_finish<PackedQ4_0>(blk, row, b, dot, acc);
  }

  // For AMX, as Q8_0's: signed w = q - 8.
  static constexpr bool kAmxSigned = true;
  static HWY_INLINE void to_signed(PackedBlock& blk) {
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_sub_epi8(blk.w[k], _mm512_set1_epi8(8));
  }
  static HWY_INLINE __m512 finish_tile(const PackedBlock& blk, float dx, float, const __m512i* exact, __m512 acc) {
    return q32_scale_add(blk, dx, exact[0], acc);
  }

  template <int kChains>
  static HWY_INLINE __m512 step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
    return q32_step<PackedQ4_0, kChains>(blk, row, b, acc);
  }
};

// The per-column factors that Q4_K and Q5_K units end with, at kSc:
// [j][16] u8 sc_j, [j][16] u8 m_j, [16] F16 d, [16] F16 dmin.
template <int kSc, class Block, class BlockOf>
HWY_INLINE void pack_k4_factors(const BlockOf& blk, uint8_t* dst) {
  constexpr int kMin = kSc + 128, kD = kSc + 256, kDmin = kSc + 288;
  for (int c = 0; c < 16; ++c) {
    const Block& b = blk(c);
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      gguf::k_scale_min(j, b.scales, &sc, &m);
      dst[kSc + 16 * j + c] = static_cast<uint8_t>(sc);
      dst[kMin + 16 * j + c] = static_cast<uint8_t>(m);
    }
    std::memcpy(dst + kD + 2 * c, &b.d, 2);
    std::memcpy(dst + kDmin + 2 * c, &b.dmin, 2);
  }
}

// d*sc_j and -dmin*m_j of sub-block j from those factors.
template <int kSc>
HWY_INLINE void load_k4_factors(const uint8_t* unit, int j, PackedBlock& blk) {
  constexpr int kMin = kSc + 128, kD = kSc + 256, kDmin = kSc + 288;
  blk.dw = _mm512_mul_ps(f16x16_to_ps(unit + kD), u8x16_to_ps(unit + kSc + 16 * j));
  const __m512 negdmin = _mm512_sub_ps(_mm512_setzero_ps(), f16x16_to_ps(unit + kDmin));
  blk.negmin = _mm512_mul_ps(negdmin, u8x16_to_ps(unit + kMin + 16 * j));
}

// Q4_K and Q5_K sub-block b: the chain at the top, given the row's dx and
// dx * sum(xq) of the block.
HWY_INLINE __m512 k4_scale_add(const PackedBlock& blk, float dx, float xsum, __m512i dot, __m512 acc) {
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(blk.dw, _mm512_set1_ps(dx)), acc);
  return _mm512_fmadd_ps(blk.negmin, _mm512_set1_ps(xsum), acc);
}

HWY_INLINE __m512 k4_finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                            __m512 acc) {
  return k4_scale_add(blk, row.xd[b], row.xsum[b], dot[0], acc);
}

template <class Fmt, int kChains>
HWY_INLINE __m512 k4_step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
  const __m512i dot = dword_sum<Fmt, 8, kChains>(_mm512_setzero_si512(), blk.w, row_dwords(row, b));
  return k4_finish(blk, row, b, &dot, acc);
}

struct PackedQ4_K : UnsignedWeights {
  static constexpr TensorType kType = TensorType::kQ4_K;
  static constexpr int kBlocks = 8;
  static constexpr int64_t kUnitBytes = 2368;
  static constexpr int kSumGroup = 0;
  // Offsets in a unit (layout at the top).
  static constexpr int kSc = 2048;

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t sb = 0; sb < nb / kBlocks; ++sb, dst += kUnitBytes) {
      const auto blk = [&](int c) -> const BlockQ4_K& {
        return reinterpret_cast<const BlockQ4_K*>(cols[c])[sb];
      };
      for (int j = 0; j < 8; ++j) {
        // Sub-blocks 2k and 2k+1: low and high nibbles of qs[32k..32k+32).
        __m512i w[8];
        transposed_values(
            [&](int c) {
              const __m256i v =
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk(c).qs + 32 * (j / 2)));
              return _mm256_and_si256(j % 2 == 0 ? v : _mm256_srli_epi16(v, 4), low4);
            },
            w);
        store_nibbles(w, dst + 256 * j);
      }
      pack_k4_factors<kSc, BlockQ4_K>(blk, dst);
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int j, PackedBlock& blk) {
    load_nibbles(unit + 256 * j, blk.w);
    load_k4_factors<kSc>(unit, j, blk);
  }

  static HWY_INLINE __m512 finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                                  __m512 acc) {
    return k4_finish(blk, row, b, dot, acc);
  }
  static HWY_INLINE __m512 finish_tile(const PackedBlock& blk, float dx, float xsum, const __m512i* dot,
                                       __m512 acc) {
    return k4_scale_add(blk, dx, xsum, dot[0], acc);
  }

  template <int kChains>
  static HWY_INLINE __m512 step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
    return k4_step<PackedQ4_K, kChains>(blk, row, b, acc);
  }
};

struct PackedQ5_K : UnsignedWeights {
  static constexpr TensorType kType = TensorType::kQ5_K;
  static constexpr int kBlocks = 8;
  static constexpr int64_t kUnitBytes = 2880;
  static constexpr int kSumGroup = 0;
  // Offsets in a unit (layout at the top).
  static constexpr int kHigh = 2048, kSc = 2560;

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    const __m512i low4x = _mm512_set1_epi8(0x0F);
    const __m512i onex = _mm512_set1_epi8(1);
    for (int64_t sb = 0; sb < nb / kBlocks; ++sb, dst += kUnitBytes) {
      const auto blk = [&](int c) -> const BlockQ5_K& {
        return reinterpret_cast<const BlockQ5_K*>(cols[c])[sb];
      };
      for (int j = 0; j < 8; ++j) {
        // Sub-block j: the nibbles of Q4_K's sub-block j, plus bit j of
        // qh[0..32) as bit 4.
        __m512i w[8];
        transposed_values(
            [&](int c) {
              const BlockQ5_K& b = blk(c);
              const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (j / 2)));
              const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
              const __m256i lo = _mm256_and_si256(j % 2 == 0 ? l : _mm256_srli_epi16(l, 4), low4);
              const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, j), one);
              return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
            },
            w);
        __m512i lo[8];
        for (int k = 0; k < 8; ++k) lo[k] = _mm512_and_si512(w[k], low4x);
        store_nibbles(lo, dst + 256 * j);
        // q < 32: after the 16-bit shift right by 4 the mask keeps only the
        // byte's own bit 4, and a 0/1 shifted left by k < 8 stays in its byte.
        __m512i bits = _mm512_setzero_si512();
        for (int k = 0; k < 8; ++k) {
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w[k], 4), onex);
          bits = _mm512_or_si512(bits, _mm512_slli_epi16(hi, k));
        }
        _mm512_storeu_si512(dst + kHigh + 64 * j, bits);
      }
      pack_k4_factors<kSc, BlockQ5_K>(blk, dst);
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int j, PackedBlock& blk) {
    load_nibbles(unit + 256 * j, blk.w);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const __m512i h = _mm512_loadu_si512(unit + kHigh + 64 * j);
    // Dword k's bit moved from bit k to bit 4 of each byte. The shifts are
    // 16-bit, but what crosses a byte boundary lands on bits 0-3 (left
    // shifts by 1-4) or 5-7 (right shifts by 1-3), never on bit 4.
    const __m512i at4[8] = {
        _mm512_slli_epi16(h, 4), _mm512_slli_epi16(h, 3), _mm512_slli_epi16(h, 2), _mm512_slli_epi16(h, 1), h,
        _mm512_srli_epi16(h, 1), _mm512_srli_epi16(h, 2), _mm512_srli_epi16(h, 3)};
    // 0xF8: a | (b & c), the low nibble joined by the masked high bit.
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_ternarylogic_epi32(blk.w[k], at4[k], bit4, 0xF8);
    load_k4_factors<kSc>(unit, j, blk);
  }

  static HWY_INLINE __m512 finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                                  __m512 acc) {
    return k4_finish(blk, row, b, dot, acc);
  }
  static HWY_INLINE __m512 finish_tile(const PackedBlock& blk, float dx, float xsum, const __m512i* dot,
                                       __m512 acc) {
    return k4_scale_add(blk, dx, xsum, dot[0], acc);
  }

  template <int kChains>
  static HWY_INLINE __m512 step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
    return k4_step<PackedQ5_K, kChains>(blk, row, b, acc);
  }
};

struct PackedQ6_K : UnsignedWeights {
  static constexpr TensorType kType = TensorType::kQ6_K;
  static constexpr int kBlocks = 8;
  static constexpr int64_t kUnitBytes = 3392;
  static constexpr int kSumGroup = 16;
  // Offsets in a unit (layout at the top).
  static constexpr int kHigh = 2048, kScales = 3072, kD = 3328;

  static void pack(const uint8_t* const* cols, int64_t nb, uint8_t* dst) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i three = _mm256_set1_epi8(3);
    const __m512i low4x = _mm512_set1_epi8(0x0F);
    const __m512i threex = _mm512_set1_epi8(3);
    for (int64_t sb = 0; sb < nb / kBlocks; ++sb, dst += kUnitBytes) {
      const auto blk = [&](int c) -> const BlockQ6_K& {
        return reinterpret_cast<const BlockQ6_K*>(cols[c])[sb];
      };
      for (int j = 0; j < 8; ++j) {
        // Sub-block j is quarter s of 128-element half h: the low (s < 2) or
        // high nibbles of ql[64h + 32(s % 2)..], and bits 2s..2s+1 of qh[32h..].
        const int h = j / 4, s = j % 4;
        __m512i w[8];
        transposed_values(
            [&](int c) {
              const BlockQ6_K& b = blk(c);
              const __m256i l =
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32 * (s % 2)));
              const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
              const __m256i lo = _mm256_and_si256(s < 2 ? l : _mm256_srli_epi16(l, 4), low4);
              const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * s), three);
              return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
            },
            w);
        __m512i lo[8];
        for (int k = 0; k < 8; ++k) lo[k] = _mm512_and_si512(w[k], low4x);
        store_nibbles(lo, dst + 256 * j);
        // q < 64: after the 16-bit shift right by 4 the mask keeps only the
        // byte's own bits 4-5, and shifts left of values < 4 by <= 6 stay
        // within the byte.
        for (int p = 0; p < 2; ++p) {
          __m512i bits = _mm512_setzero_si512();
          for (int k = 0; k < 4; ++k) {
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w[4 * p + k], 4), threex);
            bits = _mm512_or_si512(bits, _mm512_slli_epi16(hi, 2 * k));
          }
          _mm512_storeu_si512(dst + kHigh + 128 * j + 64 * p, bits);
        }
      }
      for (int c = 0; c < 16; ++c) {
        for (int g = 0; g < 16; ++g) dst[kScales + 16 * g + c] = static_cast<uint8_t>(blk(c).scales[g]);
        const float d = f16_to_f32(blk(c).d);
        std::memcpy(dst + kD + 4 * c, &d, 4);
      }
    }
  }

  static HWY_INLINE void load(const uint8_t* unit, int j, PackedBlock& blk) {
    load_nibbles(unit + 256 * j, blk.w);
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    for (int p = 0; p < 2; ++p) {
      const __m512i h = _mm512_loadu_si512(unit + kHigh + 128 * j + 64 * p);
      // Dword 4p+k's two bits moved from bits 2k to bits 4-5 of each byte.
      // The shifts are 16-bit, but what crosses a byte boundary lands
      // outside bits 4-5 and is masked off.
      const __m512i at45[4] = {_mm512_slli_epi16(h, 4), _mm512_slli_epi16(h, 2), h, _mm512_srli_epi16(h, 2)};
      // 0xF8: a | (b & c), the low nibble joined by the masked high bits.
      for (int k = 0; k < 4; ++k)
        blk.w[4 * p + k] = _mm512_ternarylogic_epi32(blk.w[4 * p + k], at45[k], bits45, 0xF8);
    }
    const __m512 d = _mm512_loadu_ps(unit + kD);
    blk.dw = _mm512_mul_ps(d, i8x16_to_ps(unit + kScales + 32 * j));
    blk.dw_hi = _mm512_mul_ps(d, i8x16_to_ps(unit + kScales + 32 * j + 16));
  }

  // exact[h]: the exact dot product of half h with signed weights q - 32
  // (16 elements, one scale each).
  static HWY_INLINE __m512 finish_tile(const PackedBlock& blk, float dx, float, const __m512i* exact, __m512 acc) {
    const __m512 vdx = _mm512_set1_ps(dx);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact[0]), _mm512_mul_ps(blk.dw, vdx), acc);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact[1]), _mm512_mul_ps(blk.dw_hi, vdx), acc);
  }

  // dot[h]: sum(q * xq) of half h, q in 0..63; minus 32 * sum(xq) it is the
  // exact dot product.
  static HWY_INLINE __m512 finish(const PackedBlock& blk, const PackedRow& row, int64_t b, const __m512i* dot,
                                  __m512 acc) {
    const int32_t* xs = row.xs + 2 * b;
    const __m512i exact[2] = {_mm512_add_epi32(dot[0], _mm512_set1_epi32(-32 * xs[0])),
                              _mm512_add_epi32(dot[1], _mm512_set1_epi32(-32 * xs[1]))};
    return finish_tile(blk, row.xd[b], 0.0f, exact, acc);
  }

  // For AMX: signed weights q - 32 (tdpbssd), whose tile products are the
  // exact dot products of finish.
  static constexpr bool kAmxSigned = true;
  static HWY_INLINE void to_signed(PackedBlock& blk) {
    for (int k = 0; k < 8; ++k) blk.w[k] = _mm512_sub_epi8(blk.w[k], _mm512_set1_epi8(32));
  }

  template <int kChains>
  static HWY_INLINE __m512 step(const PackedBlock& blk, const PackedRow& row, int64_t b, __m512 acc) {
    // Four products per half: at most two chains each.
    constexpr int kHalfChains = kChains > 2 ? 2 : kChains;
    const int32_t* x4 = row_dwords(row, b);
    const __m512i dot[2] = {dword_sum<PackedQ6_K, 4, kHalfChains>(_mm512_setzero_si512(), blk.w, x4),
                            dword_sum<PackedQ6_K, 4, kHalfChains>(_mm512_setzero_si512(), blk.w + 4, x4 + 4)};
    return finish(blk, row, b, dot, acc);
  }
};

template <class Fmt>
constexpr int64_t packed_group_bytes(int64_t nb) {
  static_assert(Fmt::kUnitBytes % 64 == 0, "packed units must be whole cache lines");
  static_assert(Fmt::kUnitBytes == static_cast<int64_t>(detail::packed_unit_bytes(Fmt::kType)) &&
                    Fmt::kBlocks * 32 == detail::packed_unit_elems(Fmt::kType) &&
                    Fmt::kSumGroup == detail::packed_sum_group(Fmt::kType),
                "the layout disagrees with matmul_simd.h");
  return (nb + Fmt::kBlocks - 1) / Fmt::kBlocks * Fmt::kUnitBytes;
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

// R rows against one packed group: each row's lanes run Fmt::step over the
// blocks in order, whatever R (batch invariance).
// With `next` set, unit u of the group at `next` is prefetched into L2 while
// unit u of this one is computed, so memory latency hides behind the
// arithmetic of a batch (the group is then reused by every row tile).
// Decode (one row) instead streams under the machine's strategy
// (ops/kernel_choice.h): kHint is the prefetch locality (3 = T0 ... 0 =
// NTA; -1 none), `ahead` its distance in bytes.
template <class Fmt, int R, int kHint = -1>
HWY_INLINE void packed_rows16(const uint8_t* grp, int64_t nb, const PackedRow* rows, __m512* acc,
                              const uint8_t* next, int64_t ahead = 0) {
  constexpr int kLines = static_cast<int>(Fmt::kUnitBytes / 64);
  constexpr int kChains = R == 1 ? 4 : 2;
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b0 = 0; b0 < nb; b0 += Fmt::kBlocks, grp += Fmt::kUnitBytes) {
    for (int j = 0; j < Fmt::kBlocks && b0 + j < nb; ++j) {
      // The unit's lines are prefetched a share per block: a burst of a
      // whole Q6_K unit (53 lines) would overrun the line fill buffers.
      for (int l = j * kLines / Fmt::kBlocks; l < (j + 1) * kLines / Fmt::kBlocks; ++l) {
        if (next != nullptr) {
          _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T1);
        } else if constexpr (kHint >= 0) {
          __builtin_prefetch(grp + ahead + 64 * l, 0, kHint);
        }
      }
      PackedBlock blk;
      Fmt::load(grp, j, blk);
      for (int i = 0; i < R; ++i) acc[i] = Fmt::template step<kChains>(blk, rows[i], b0 + j, acc[i]);
    }
    if (next != nullptr) next += Fmt::kUnitBytes;
  }
}

// One row against one packed group under the strategy `s`.
template <class Fmt>
HWY_INLINE void packed_row16_streamed(const uint8_t* grp, int64_t nb, const PackedRow* row, __m512* acc,
                                      StreamStrategy s) {
  switch (s.prefetch) {
    case Prefetch::kT0: return packed_rows16<Fmt, 1, 3>(grp, nb, row, acc, nullptr, s.distance);
    case Prefetch::kT1: return packed_rows16<Fmt, 1, 2>(grp, nb, row, acc, nullptr, s.distance);
    case Prefetch::kT2: return packed_rows16<Fmt, 1, 1>(grp, nb, row, acc, nullptr, s.distance);
    case Prefetch::kNta: return packed_rows16<Fmt, 1, 0>(grp, nb, row, acc, nullptr, s.distance);
    case Prefetch::kNone: break;
  }
  packed_rows16<Fmt, 1>(grp, nb, row, acc, nullptr);
}

// Columns [o_begin, o_end) (o_begin a multiple of 16) from packed weights:
// row tiles of 4, then single rows.
template <class Fmt>
void packed_cols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                 int64_t o_end) {
  const int64_t nb = t.n_in / 32;
  const int64_t group_bytes = packed_group_bytes<Fmt>(nb);
  const int64_t sums_per_row = t.n_in / std::max(Fmt::kSumGroup, 1);
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
      PackedRow rows[kR];
      for (int i = 0; i < n; ++i) {
        rows[i].x = acts + (r + i) * t.n_in;
        rows[i].xd = t.xd + (r + i) * nb;
        rows[i].xs = Fmt::kSumGroup > 0 ? xq_sums + (r + i) * sums_per_row : nullptr;
        rows[i].xsum = t.xsum + (r + i) * nb;
      }
      __m512 acc[kR];
      if (n == kR) {
        packed_rows16<Fmt, kR>(grp, nb, rows, acc, r == 0 ? next : nullptr);
      } else if (t.rows == 1) {
        packed_row16_streamed<Fmt>(grp, nb, rows, acc, t.stream);
      } else {
        packed_rows16<Fmt, 1>(grp, nb, rows, acc, r == 0 ? next : nullptr);
      }
      for (int i = 0; i < n; ++i) _mm512_mask_storeu_ps(t.y + (r + i) * t.y_stride + o, valid, acc[i]);
      r += n;
    }
  }
}

// Runs fn.template operator()<Fmt>() for the packed format of `type`
// (HasPacked(type) must hold).
template <class Fn>
HWY_INLINE void with_packed_format(TensorType type, const Fn& fn) {
  switch (type) {
    case TensorType::kQ4_0: fn.template operator()<PackedQ4_0>(); break;
    case TensorType::kQ4_K: fn.template operator()<PackedQ4_K>(); break;
    case TensorType::kQ5_K: fn.template operator()<PackedQ5_K>(); break;
    case TensorType::kQ6_K: fn.template operator()<PackedQ6_K>(); break;
    default: fn.template operator()<PackedQ8_0>(); break;
  }
}

void PackGroups(const detail::MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out) {
  with_packed_format(t.type, [&]<class Fmt>() { pack_groups<Fmt>(t, g_begin, g_end, out); });
}

void MatmulPackedCols(const detail::MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums,
                      int64_t o_begin, int64_t o_end) {
  with_packed_format(t.type, [&]<class Fmt>() { packed_cols<Fmt>(t, packed, xq_sums, o_begin, o_end); });
}

bool HasPacked(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K;
}

}  // namespace ladder::ops::HWY_NAMESPACE
LADDER_TARGET_FEATURES_POP()
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
