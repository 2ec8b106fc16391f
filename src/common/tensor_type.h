// Tensor element types as numbered by GGUF/ggml, their block layouts, and
// per-type facts (block size, bytes per block). Shared by gguf/ (reading,
// writing, dequantizing) and ops/ (kernels that consume blocks in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ladder {

// Values are the on-disk ggml_type ids; never renumber.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct TensorTypeTraits {
  TensorType type;
  std::string_view name;   // "Q4_K"
  uint32_t block_elems;    // elements per block (1 for plain types)
  uint32_t block_bytes;    // bytes per block
  bool dequantizable;      // Ladder can turn it into F32
};

// Facts for a raw ggml type id, or nullopt for an id Ladder does not know.
std::optional<TensorTypeTraits> tensor_type_traits(uint32_t raw_type);
const TensorTypeTraits& traits_of(TensorType type);
std::string_view tensor_type_name(TensorType type);
// Parses "q8_0", "F16", ... (case-insensitive).
std::optional<TensorType> tensor_type_from_name(std::string_view name);

// Bytes taken by a row of n elements; n must be a multiple of block_elems.
inline size_t row_bytes(const TensorTypeTraits& t, size_t n) { return n / t.block_elems * t.block_bytes; }

// ---- Block layouts (little-endian, packed exactly as ggml writes them) ----
// F16 scales are stored as raw IEEE half bits (see common/half.h).

inline constexpr int kQK4_0 = 32;
struct BlockQ4_0 {
  uint16_t d;               // scale
  uint8_t qs[kQK4_0 / 2];   // nibbles: low = element j, high = element j + 16
};
static_assert(sizeof(BlockQ4_0) == 18);

inline constexpr int kQK4_1 = 32;
struct BlockQ4_1 {
  uint16_t d;  // scale
  uint16_t m;  // min
  uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

inline constexpr int kQK5_0 = 32;
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // fifth bit of each of the 32 quants
  uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

inline constexpr int kQK5_1 = 32;
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

inline constexpr int kQK8_0 = 32;
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

inline constexpr int kQK8_1 = 32;
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;  // d * sum(qs)
  int8_t qs[kQK8_1];
};
static_assert(sizeof(BlockQ8_1) == 36);

// K-quants: super-blocks of 256 elements.
inline constexpr int kQK_K = 256;
inline constexpr int kKScaleSize = 12;

struct BlockQ4_K {
  uint16_t d;                    // super-block scale for quantized scales
  uint16_t dmin;                 // super-block scale for quantized mins
  uint8_t scales[kKScaleSize];   // 8 scales + 8 mins, 6 bits each
  uint8_t qs[kQK_K / 2];         // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];  // high bits
  uint8_t qs[kQK_K / 2];  // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // lower 4 bits
  uint8_t qh[kQK_K / 4];      // upper 2 bits
  int8_t scales[kQK_K / 16];  // 8-bit scales of 16-element groups
  uint16_t d;                 // super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // sums of groups of 16 quants
};
static_assert(sizeof(BlockQ8_K) == 292);

// Q2_K and Q3_K are known (sizes, so files that hold them can be inspected)
// but not dequantized.
inline constexpr uint32_t kBlockQ2_KBytes = 84;
inline constexpr uint32_t kBlockQ3_KBytes = 110;

}  // namespace ladder
