// Per-target (x86 AVX2 and up) access to the 32-element blocks of Q8_0 and
// Q4_0 weights, shared by every integer kernel (matmul-inl.h, the
// interleaved and packed kernels): a block's weights as 32 signed bytes and
// its F16 scale.

#if defined(LADDER_OPS_Q32_BLOCK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_Q32_BLOCK_INL_H_
#undef LADDER_OPS_Q32_BLOCK_INL_H_
#else
#define LADDER_OPS_Q32_BLOCK_INL_H_
#endif

#include <cstdint>

#include "common/tensor_type.h"
#include "hwy/highway.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {

// Block b of a Q8_0 or Q4_0 row as 32 signed bytes (Q4_0: nibble - 8).
template <bool kIsQ4>
HWY_INLINE __m256i q32_block_s8(const uint8_t* row, int64_t b) {
  if constexpr (kIsQ4) {
    const auto* blk = reinterpret_cast<const BlockQ4_0*>(row) + b;
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->qs));
    const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
  } else {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs));
  }
}

// The F16 scale of block b of a Q8_0 or Q4_0 row.
template <bool kIsQ4>
HWY_INLINE uint16_t q32_block_scale(const uint8_t* row, int64_t b) {
  if constexpr (kIsQ4) {
    return (reinterpret_cast<const BlockQ4_0*>(row) + b)->d;
  } else {
    return (reinterpret_cast<const BlockQ8_0*>(row) + b)->d;
  }
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // x86 AVX2 and up
#endif  // LADDER_OPS_Q32_BLOCK_INL_H_
