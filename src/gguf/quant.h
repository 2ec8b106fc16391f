// Row conversions between F32 and every tensor type Ladder reads: the
// reference (scalar) dequantizers and quantizers, bit-compatible with the
// ggml block layouts in common/tensor_type.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder::gguf {

// dst[0..n) = the n elements stored at src in `type`. n must be a multiple of
// the type's block size. kUnimplemented for a type that cannot be dequantized.
Status dequantize_row(TensorType type, const void* src, float* dst, size_t n);

// Writes n floats into row_bytes(type, n) bytes at dst. Supported: F32, F16,
// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K.
Status quantize_row(TensorType type, const float* src, void* dst, size_t n);

// The 6-bit scale and min of sub-block j (0..7) from the 12 packed scale
// bytes of a Q4_K or Q5_K super-block:
//   bytes 0..3:  scale j (j<4) in bits 0..5; bits 6..7 = high bits of scale j+4
//   bytes 4..7:  min j   (j<4) in bits 0..5; bits 6..7 = high bits of min j+4
//   bytes 8..11: low 4 bits of scale j+4 | low 4 bits of min j+4 << 4
// (inline: the SIMD kernels of ops/ unpack scales with it too).
inline void k_scale_min(int j, const uint8_t* s, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The inverse of k_scale_min: 8 scales and 8 mins (0..63) into 12 bytes.
void pack_k_scale_min(const int* scales, const int* mins, uint8_t* out);

// The bit layouts of K-quant levels (256 per super-block), shared by every
// quantizer that writes these types:
//   Q4_K: q in 0..15 -> qs[128]; Q5_K: q in 0..31 -> qs[128] + qh[32];
//   Q6_K: q in 0..63 -> ql[128] + qh[64].
void pack_q4_k_levels(const int* q, uint8_t* qs);
void pack_q5_k_levels(const int* q, uint8_t* qs, uint8_t* qh);
void pack_q6_k_levels(const int* q, uint8_t* ql, uint8_t* qh);

}  // namespace ladder::gguf
