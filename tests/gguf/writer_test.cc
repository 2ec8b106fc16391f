// GgufWriter -> GgufFile round trips: every value type, nested arrays,
// tensors with alignment padding; and the writer's input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "test_support.h"

namespace ladder::gguf {
namespace {

// Structural equality of two values, including the on-disk type.
bool same(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (const Array* x = a.as_array()) {
    const Array* y = b.as_array();
    if (x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i) {
      if (!same(x->items[i], y->items[i])) return false;
    }
    return true;
  }
  if (a.as_string()) return *a.as_string() == *b.as_string();
  if (a.as_bool()) return *a.as_bool() == *b.as_bool();
  if (a.type() == ValueType::kFloat32 || a.type() == ValueType::kFloat64) {
    const double x = *a.as_float(), y = *b.as_float();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  if (a.as_uint() && b.as_uint()) return *a.as_uint() == *b.as_uint();
  return a.as_int() == b.as_int();
}

std::vector<std::pair<std::string, Value>> every_value_type() {
  using VT = ValueType;
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("t.u8", Value::make_uint(VT::kUint8, 255));
  kv.emplace_back("t.i8", Value::make_int(VT::kInt8, -128));
  kv.emplace_back("t.u16", Value::make_uint(VT::kUint16, 65535));
  kv.emplace_back("t.i16", Value::make_int(VT::kInt16, -32768));
  kv.emplace_back("t.u32", Value::make_uint(VT::kUint32, 4000000000u));
  kv.emplace_back("t.i32", Value::make_int(VT::kInt32, -2000000000));
  kv.emplace_back("t.u64", Value::make_uint(VT::kUint64, std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("t.i64", Value::make_int(VT::kInt64, std::numeric_limits<int64_t>::min()));
  kv.emplace_back("t.f32", Value::make_float(VT::kFloat32, 0.1));
  kv.emplace_back("t.f64", Value::make_float(VT::kFloat64, 0.1));
  kv.emplace_back("t.bool_true", Value::make_bool(true));
  kv.emplace_back("t.bool_false", Value::make_bool(false));
  kv.emplace_back("t.str", Value::make_string("h\xC3\xA9llo, \xE4\xB8\x96\xE7\x95\x8C"));
  kv.emplace_back("t.str_empty", Value::make_string(""));
  kv.emplace_back("t.str_nul", Value::make_string(std::string("a\0b", 3)));
  kv.emplace_back("t.arr_empty", Value::make_array(VT::kInt32, {}));
  kv.emplace_back("t.arr_u8", Value::make_array(VT::kUint8, {Value::make_uint(VT::kUint8, 0),
                                                             Value::make_uint(VT::kUint8, 200)}));
  kv.emplace_back("t.arr_i64", Value::make_array(VT::kInt64, {Value::make_int(VT::kInt64, -5),
                                                              Value::make_int(VT::kInt64, 1ll << 40)}));
  kv.emplace_back("t.arr_f32", Value::make_array(VT::kFloat32, {Value::make_float(VT::kFloat32, -1.5),
                                                                Value::make_float(VT::kFloat32, 1e30)}));
  kv.emplace_back("t.arr_f64", Value::make_array(VT::kFloat64, {Value::make_float(VT::kFloat64, 1e300)}));
  kv.emplace_back("t.arr_bool",
                  Value::make_array(VT::kBool, {Value::make_bool(true), Value::make_bool(false)}));
  kv.emplace_back("t.arr_str",
                  Value::make_array(VT::kString, {Value::make_string("a"), Value::make_string(""),
                                                  Value::make_string("<0x0A>")}));
  // [[1, 2], [], [3]] and [[["x"]], [["y", "z"]]]
  kv.emplace_back(
      "t.nested2",
      Value::make_array(VT::kArray, {Value::make_array(VT::kInt32, {Value::make_int(VT::kInt32, 1),
                                                                    Value::make_int(VT::kInt32, 2)}),
                                     Value::make_array(VT::kInt32, {}),
                                     Value::make_array(VT::kInt32, {Value::make_int(VT::kInt32, 3)})}));
  kv.emplace_back(
      "t.nested3",
      Value::make_array(
          VT::kArray,
          {Value::make_array(VT::kArray, {Value::make_array(VT::kString, {Value::make_string("x")})}),
           Value::make_array(VT::kArray, {Value::make_array(VT::kString, {Value::make_string("y"),
                                                                          Value::make_string("z")})})}));
  return kv;
}

TEST(Writer, EveryValueTypeRoundTrips) {
  GgufWriter w;
  const auto kv = every_value_type();
  for (const auto& [k, v] : kv) w.set(k, v);
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->metadata().size(), kv.size());
  for (size_t i = 0; i < kv.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].first, kv[i].first);  // file order kept
    EXPECT_TRUE(same(f->metadata()[i].second, kv[i].second)) << kv[i].first;
  }
  EXPECT_TRUE(f->tensors().empty());
  // Typed getters convert integer widths when the value fits.
  EXPECT_EQ(f->get_uint("t.u8").value(), 255u);
  EXPECT_EQ(f->get_int("t.u32").value(), 4000000000ll);
  EXPECT_EQ(f->get_int("t.i8").value(), -128);
  EXPECT_FALSE(f->get_uint("t.i8").is_ok());  // negative
  EXPECT_FALSE(f->get_int("t.u64").is_ok());  // too large for int64
  EXPECT_EQ(f->get_float("t.f32").value(), static_cast<double>(0.1f));
  EXPECT_EQ(f->get_float("t.f64").value(), 0.1);
  EXPECT_EQ(f->get_float("t.i32").value(), -2000000000.0);
  EXPECT_TRUE(f->get_bool("t.bool_true").value());
  EXPECT_EQ(f->get_string("t.str_nul").value(), std::string("a\0b", 3));
  EXPECT_EQ(f->get_string_array("t.arr_str").value(), (std::vector<std::string>{"a", "", "<0x0A>"}));
  EXPECT_EQ(f->get_int_array("t.arr_i64").value(), (std::vector<int64_t>{-5, 1ll << 40}));
  EXPECT_EQ(f->get_float_array("t.arr_f32").value(), (std::vector<float>{-1.5f, 1e30f}));
  auto wrong = f->get_string_array("t.nested2");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("t.nested2"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("array of array"), std::string::npos);
  EXPECT_EQ(f->get_bool_or("absent", true).value(), true);
  EXPECT_EQ(f->get_string_or("absent", "x").value(), "x");
  EXPECT_EQ(f->get_float_or("t.f64", 2.0).value(), 0.1);
}

TEST(Writer, SettingAKeyTwiceReplacesIt) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_u32("a", 2);
  auto f = GgufFile::parse(w.to_bytes());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(f->get_uint("a").value(), 2u);
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
  return v;
}

void check_tensors_round_trip(uint32_t alignment) {
  GgufWriter w(alignment);
  w.set_string("general.architecture", "test");
  // Sizes chosen so that padding is needed between tensors: 12, 68, 60 bytes.
  const auto a = pattern(12, 1), b = pattern(68, 2), c = pattern(60, 3);
  ASSERT_TRUE(w.add_tensor("a", TensorType::kF32, {3}, a).is_ok());
  ASSERT_TRUE(w.add_tensor("blk.0.b", TensorType::kQ8_0, {32, 2}, b).is_ok());
  ASSERT_TRUE(w.add_tensor("c", TensorType::kF16, {5, 3, 2}, c).is_ok());
  const auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), alignment);
  EXPECT_EQ(f->data_offset() % alignment, 0u);
  // The default alignment is implied; any other is recorded.
  EXPECT_EQ(f->find("general.alignment") != nullptr, alignment != kDefaultAlignment);
  ASSERT_EQ(f->tensors().size(), 3u);
  const std::vector<const std::vector<uint8_t>*> data = {&a, &b, &c};
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    ASSERT_EQ(t.n_bytes, data[i]->size()) << t.name;
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.n_bytes), *data[i]) << t.name;
  }
  EXPECT_EQ(f->find_tensor("blk.0.b")->type, TensorType::kQ8_0);
  EXPECT_EQ(f->find_tensor("blk.0.b")->shape, (std::vector<uint64_t>{32, 2}));
  EXPECT_EQ(f->find_tensor("blk.0.b")->n_rows(), 2u);
  EXPECT_EQ(f->find_tensor("c")->shape, (std::vector<uint64_t>{5, 3, 2}));
  EXPECT_EQ(f->find_tensor("c")->n_elements, 30u);
  EXPECT_EQ(f->file_size() % alignment, 0u);
}

TEST(Writer, TensorsRoundTripWithPadding) {
  for (uint32_t alignment : {1u, 8u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    check_tensors_round_trip(alignment);
  }
}

TEST(Writer, WriteToFileMatchesToBytes) {
  GgufWriter w(64);
  w.set_i32("x", -7);
  ASSERT_TRUE(w.add_tensor("t", TensorType::kF32, {5}, pattern(20, 9)).is_ok());
  const std::string path = ladder::testing::temp_dir() + "/w.gguf";
  ASSERT_TRUE(w.write(path).is_ok());
  EXPECT_EQ(ladder::testing::read_file(path),
            std::string(reinterpret_cast<const char*>(w.to_bytes().data()), w.to_bytes().size()));
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->get_int("x").value(), -7);
  EXPECT_EQ(f->digest().size(), 64u);
  EXPECT_EQ(w.write("/nonexistent/dir/w.gguf").code(), StatusCode::kIo);
}

TEST(Writer, RejectsBadTensors) {
  GgufWriter w;
  EXPECT_EQ(w.add_tensor("", TensorType::kF32, {1}, pattern(4, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("x", TensorType::kF32, {2}, pattern(4, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("x", TensorType::kF32, {0}, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("x", TensorType::kF32, {1, 1, 1, 1, 1}, pattern(4, 0)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("x", TensorType::kQ4_0, {16}, pattern(9, 0)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.add_tensor("x", TensorType::kF32, {1}, pattern(4, 0)).is_ok());
  Status dup = w.add_tensor("x", TensorType::kF32, {1}, pattern(4, 0));
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("duplicate"), std::string::npos);
}

}  // namespace
}  // namespace ladder::gguf
