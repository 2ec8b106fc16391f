#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/half.h"
#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("x must be positive, got " + std::to_string(x));
  return x;
}

Status use_twice(int x, int* out) {
  LADDER_ASSIGN_OR_RETURN(int v, parse_positive(x));
  *out = 2 * v;
  return Status::ok();
}

TEST(Status, ResultCarriesValueOrError) {
  auto good = parse_positive(3);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().to_string(), "invalid_argument: x must be positive, got -1");
}

TEST(Status, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(use_twice(4, &out).is_ok());
  EXPECT_EQ(out, 8);
  Status st = use_twice(0, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(Half, F16RoundTripsEveryHalfValue) {
  // Every finite half converts to float and back to the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = f16_to_f32(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), bits) << "half 0x" << std::hex << h;
  }
}

TEST(Half, F16KnownValuesAndRounding) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);           // rounds to infinity
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f818000u)), 0x3f82);
}

TEST(TensorType, TraitsMatchGgml) {
  auto q4k = tensor_type_traits(12);
  ASSERT_TRUE(q4k.has_value());
  EXPECT_EQ(q4k->name, "Q4_K");
  EXPECT_EQ(q4k->block_elems, 256u);
  EXPECT_EQ(q4k->block_bytes, 144u);
  EXPECT_FALSE(tensor_type_traits(4).has_value());  // removed Q4_2
  EXPECT_EQ(tensor_type_from_name("q8_0"), TensorType::kQ8_0);
  EXPECT_EQ(row_bytes(traits_of(TensorType::kQ6_K), 512), 420u);
}

}  // namespace
}  // namespace ladder
