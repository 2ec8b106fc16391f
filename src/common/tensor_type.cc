#include "common/tensor_type.h"

#include <array>
#include <cctype>
#include <string>

#include "common/check.h"

namespace ladder {
namespace {

constexpr std::array kTraits = {
    TensorTypeTraits{TensorType::kF32, "F32", 1, 4, true},
    TensorTypeTraits{TensorType::kF16, "F16", 1, 2, true},
    TensorTypeTraits{TensorType::kQ4_0, "Q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    TensorTypeTraits{TensorType::kQ4_1, "Q4_1", kQK4_1, sizeof(BlockQ4_1), true},
    TensorTypeTraits{TensorType::kQ5_0, "Q5_0", kQK5_0, sizeof(BlockQ5_0), true},
    TensorTypeTraits{TensorType::kQ5_1, "Q5_1", kQK5_1, sizeof(BlockQ5_1), true},
    TensorTypeTraits{TensorType::kQ8_0, "Q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    TensorTypeTraits{TensorType::kQ8_1, "Q8_1", kQK8_1, sizeof(BlockQ8_1), false},
    TensorTypeTraits{TensorType::kQ2_K, "Q2_K", kQK_K, kBlockQ2_KBytes, false},
    TensorTypeTraits{TensorType::kQ3_K, "Q3_K", kQK_K, kBlockQ3_KBytes, false},
    TensorTypeTraits{TensorType::kQ4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), true},
    TensorTypeTraits{TensorType::kQ5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), true},
    TensorTypeTraits{TensorType::kQ6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), true},
    TensorTypeTraits{TensorType::kQ8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), true},
    TensorTypeTraits{TensorType::kI8, "I8", 1, 1, false},
    TensorTypeTraits{TensorType::kI16, "I16", 1, 2, false},
    TensorTypeTraits{TensorType::kI32, "I32", 1, 4, false},
    TensorTypeTraits{TensorType::kI64, "I64", 1, 8, false},
    TensorTypeTraits{TensorType::kF64, "F64", 1, 8, false},
    TensorTypeTraits{TensorType::kBF16, "BF16", 1, 2, true},
};

}  // namespace

std::optional<TensorTypeTraits> tensor_type_traits(uint32_t raw_type) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw_type) return t;
  }
  return std::nullopt;
}

const TensorTypeTraits& traits_of(TensorType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  LADDER_CHECK(false, "TensorType without traits");
  return kTraits[0];
}

std::string_view tensor_type_name(TensorType type) { return traits_of(type).name; }

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& t : kTraits) {
    if (t.name == upper) return t.type;
  }
  return std::nullopt;
}

}  // namespace ladder
