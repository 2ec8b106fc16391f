// Hostile input: crafted malformed files must give kInvalidArgument (or
// kUnimplemented) naming the field and byte offset; every truncation and
// thousands of random corruptions of a real file must fail cleanly (this
// suite also runs under ASan/UBSan in `make test-asan`).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace ladder::gguf {
namespace {

using test::RawGguf;
using test::touch_everything;

// Parses `bytes` and expects failure with `code` and a message holding each
// of `needles`.
void expect_error(const std::vector<uint8_t>& bytes, StatusCode code, std::vector<std::string> needles) {
  auto f = GgufFile::parse(bytes);
  ASSERT_FALSE(f.is_ok()) << "parsed a malformed file";
  EXPECT_EQ(f.status().code(), code) << f.status().to_string();
  EXPECT_EQ(f.status().message().rfind("gguf: ", 0), 0u) << f.status().message();
  for (const auto& n : needles) {
    EXPECT_NE(f.status().message().find(n), std::string::npos)
        << "'" << n << "' not in: " << f.status().message();
  }
}

// A valid file with one F32 tensor "w" [8] at offset 0, used as a baseline.
RawGguf valid_file() {
  RawGguf r;
  r.header(1, 1).kv_str("general.architecture", "llama").tensor("w", {8}, 0, 0).pad_to(32).zeros(32);
  return r;
}

TEST(Malformed, BaselineIsValid) {
  auto f = GgufFile::parse(valid_file().bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), 1u);
}

TEST(Malformed, HeaderProblems) {
  expect_error({}, StatusCode::kInvalidArgument, {"magic", "too small"});
  RawGguf bad_magic;
  bad_magic.u32(0x46554746).u32(3).u64(0).u64(0);
  expect_error(bad_magic.bytes, StatusCode::kInvalidArgument, {"magic", "not a GGUF file"});
  RawGguf v1;
  v1.header(0, 0, 1);
  expect_error(v1.bytes, StatusCode::kUnimplemented, {"version", "v1"});
  RawGguf v9;
  v9.header(0, 0, 9);
  expect_error(v9.bytes, StatusCode::kUnimplemented, {"version", "unknown GGUF version 9"});
  RawGguf big_endian;  // version 3 written big-endian
  big_endian.header(0, 0, 0x03000000);
  expect_error(big_endian.bytes, StatusCode::kUnimplemented, {"version", "big-endian"});
  RawGguf many_tensors;
  many_tensors.header(uint64_t{1} << 40, 0);
  expect_error(many_tensors.bytes, StatusCode::kInvalidArgument, {"n_tensors", "at byte 8"});
  RawGguf many_kv;
  many_kv.header(0, 1000).zeros(100);
  expect_error(many_kv.bytes, StatusCode::kInvalidArgument, {"n_kv", "at byte 16"});
  // v2 has the same layout as v3 and is accepted.
  RawGguf v2;
  v2.header(0, 1, 2).kv_u32("a", 1);
  auto f = GgufFile::parse(v2.bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
}

TEST(Malformed, HugeStringLengths) {
  RawGguf key;
  key.header(0, 1).u64(uint64_t{1} << 62).zeros(20);
  expect_error(key.bytes, StatusCode::kInvalidArgument, {"metadata 0", "key", "at byte 24", "string length"});
  RawGguf value;
  value.header(0, 1).str("general.name").u32(8).u64(1000000).zeros(20);
  expect_error(value.bytes, StatusCode::kInvalidArgument,
               {"metadata 0 (\"general.name\")", "string length", "at byte 48", "exceeds"});
  RawGguf name;
  name.header(1, 0).u64(~uint64_t{0}).zeros(30);
  expect_error(name.bytes, StatusCode::kInvalidArgument, {"tensor 0", "name", "string length"});
}

TEST(Malformed, HugeArrayCounts) {
  RawGguf r;
  r.header(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(uint64_t{1} << 60).zeros(64);
  expect_error(r.bytes, StatusCode::kInvalidArgument, {"tokenizer.ggml.tokens", "array count", "elements"});
  // Within the limit but more items than bytes left: 100 u32 in 40 bytes.
  RawGguf r2;
  r2.header(0, 1).str("a").u32(9).u32(4).u64(100).zeros(40);
  expect_error(r2.bytes, StatusCode::kInvalidArgument, {"\"a\"", "array count", "cannot fit"});
  // An item deep inside an array is named by its index.
  RawGguf r3;
  r3.header(0, 1).str("toks").u32(9).u32(8).u64(3).str("ok").str("fine").u64(999).zeros(8);
  expect_error(r3.bytes, StatusCode::kInvalidArgument, {"(\"toks\") item 2", "string length"});
}

TEST(Malformed, NestedArraysTooDeep) {
  RawGguf r;
  r.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 20; ++i) r.u32(9).u64(1);  // array of array of ...
  r.u32(4).u64(0);
  expect_error(r.bytes, StatusCode::kInvalidArgument, {"deep", "nest deeper"});
}

TEST(Malformed, BadValueTypesAndBools) {
  RawGguf r;
  r.header(0, 1).str("k").u32(13).u32(0);
  expect_error(r.bytes, StatusCode::kInvalidArgument, {"\"k\"", "value type", "unknown value type 13"});
  RawGguf b;
  b.header(0, 1).str("flag").u32(7).u8(2);
  expect_error(b.bytes, StatusCode::kInvalidArgument, {"flag", "bool"});
  RawGguf e;
  e.header(0, 1).str("").u32(4).u32(0);
  expect_error(e.bytes, StatusCode::kInvalidArgument, {"empty key"});
}

TEST(Malformed, DuplicateKeysAndTensorNames) {
  RawGguf r;
  r.header(0, 2).kv_u32("general.alignment", 32).kv_u32("general.alignment", 64);
  expect_error(r.bytes, StatusCode::kInvalidArgument, {"metadata 1", "general.alignment", "duplicate key"});
  RawGguf t;
  t.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad_to(32).zeros(64);
  expect_error(t.bytes, StatusCode::kInvalidArgument, {"tensor 1 (\"w\")", "duplicate tensor name"});
}

TEST(Malformed, TensorShapes) {
  RawGguf five;
  five.header(1, 0).tensor("blk.0.attn_q.weight", {1, 1, 1, 1, 1}, 0, 0).pad_to(32).zeros(32);
  expect_error(five.bytes, StatusCode::kInvalidArgument,
               {"tensor 0 (\"blk.0.attn_q.weight\")", "n_dims", "5"});
  RawGguf zero;
  zero.header(1, 0).tensor("z", {4, 0}, 0, 0).pad_to(32).zeros(32);
  expect_error(zero.bytes, StatusCode::kInvalidArgument,
               {"tensor 0 (\"z\") dims at byte", "dimension 1 is 0"});
  RawGguf overflow;
  overflow.header(1, 0).tensor("o", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0).pad_to(32).zeros(32);
  expect_error(overflow.bytes, StatusCode::kInvalidArgument, {"\"o\"", "dims", "overflow"});
  RawGguf too_big;  // fits 63 bits, but far more bytes than the file
  too_big.header(1, 0).tensor("b", {uint64_t{1} << 20, 1024}, 0, 0).pad_to(32).zeros(32);
  expect_error(too_big.bytes, StatusCode::kInvalidArgument, {"\"b\"", "dims", "exceed the file size"});
  RawGguf row;  // Q4_0 rows must be a multiple of 32
  row.header(1, 0).tensor("q", {33}, 2, 0).pad_to(32).zeros(64);
  expect_error(row.bytes, StatusCode::kInvalidArgument, {"\"q\"", "row length 33", "Q4_0"});
  RawGguf type;
  type.header(1, 0).tensor("t", {8}, 99, 0).pad_to(32).zeros(32);
  expect_error(type.bytes, StatusCode::kUnimplemented, {"\"t\"", "type", "unknown tensor type id 99"});
}

TEST(Malformed, TensorOffsets) {
  RawGguf outside;  // 32 bytes of F32 [8] at offset 32 in a 32-byte data section
  outside.header(1, 0).tensor("w", {8}, 0, 32).pad_to(32).zeros(32);
  expect_error(outside.bytes, StatusCode::kInvalidArgument,
               {"tensor 0 (\"w\")", "offset", "outside the file"});
  RawGguf huge;
  huge.header(1, 0).tensor("w", {8}, 0, ~uint64_t{0} - 31).pad_to(32).zeros(32);
  expect_error(huge.bytes, StatusCode::kInvalidArgument, {"\"w\"", "offset", "outside"});
  RawGguf misaligned;
  misaligned.header(1, 0).tensor("w", {4}, 0, 4).pad_to(32).zeros(64);
  expect_error(misaligned.bytes, StatusCode::kInvalidArgument, {"\"w\"", "offset 4", "alignment 32"});
  RawGguf no_padding;  // the data section would start past the end
  no_padding.header(1, 0).tensor("w", {1}, 0, 0);
  expect_error(no_padding.bytes, StatusCode::kInvalidArgument, {"data section"});
  // Two tensors claiming the same 32 bytes need 64: total exceeds the section.
  RawGguf overlap;
  overlap.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).pad_to(32).zeros(32);
  expect_error(overlap.bytes, StatusCode::kInvalidArgument, {"\"b\"", "offset", "more than"});
}

TEST(Malformed, Alignment) {
  for (uint32_t bad : {0u, 3u, 33u, 48u}) {
    RawGguf r;
    r.header(0, 1).kv_u32("general.alignment", bad);
    expect_error(r.bytes, StatusCode::kInvalidArgument,
                 {"\"general.alignment\"", "at byte", "alignment " + std::to_string(bad)});
  }
  RawGguf wrong_type;
  wrong_type.header(0, 1).kv_str("general.alignment", "64");
  expect_error(wrong_type.bytes, StatusCode::kInvalidArgument, {"general.alignment", "string"});
  // A valid non-default alignment moves the data section.
  RawGguf ok;
  ok.header(1, 1).kv_u32("general.alignment", 128).tensor("w", {8}, 0, 0).pad_to(128).zeros(32);
  auto f = GgufFile::parse(ok.bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 128u);
  EXPECT_EQ(f->data_offset(), 128u);
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  const std::string s = ladder::testing::read_file(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(Truncation, EveryPrefixOfTheHeaderFailsCleanly) {
  const auto bytes = file_bytes(ladder::testing::shared_path("models/stories260K.gguf"));
  auto full = GgufFile::parse(bytes);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  const size_t header_end = full->data_offset();
  uint64_t data_end = 0;
  for (const auto& t : full->tensors()) data_end = std::max(data_end, header_end + t.offset + t.n_bytes);

  for (size_t n = 0; n < header_end; ++n) {
    auto f = GgufFile::parse(std::span<const uint8_t>(bytes.data(), n));
    ASSERT_FALSE(f.is_ok()) << "prefix " << n;
    ASSERT_EQ(f.status().code(), StatusCode::kInvalidArgument) << n << ": " << f.status().to_string();
  }
  // Beyond the header, sample densely: fails until the last tensor's data is whole.
  for (size_t n = header_end; n <= bytes.size(); n += 997) {
    auto f = GgufFile::parse(std::span<const uint8_t>(bytes.data(), n));
    ASSERT_EQ(f.is_ok(), n >= data_end) << "prefix " << n << ": " << f.status().to_string();
  }
  EXPECT_TRUE(GgufFile::parse(std::span<const uint8_t>(bytes.data(), data_end)).is_ok());
}

TEST(Truncation, WriterFileWithEveryTypeAndNestedArrays) {
  GgufWriter w(64);
  w.set("nested", Value::make_array(ValueType::kArray,
                                    {Value::make_array(ValueType::kString, {Value::make_string("ab")})}));
  w.set_f32("f", 1.5f);
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ8_0, TensorType::kBF16}) {
    const auto& traits = traits_of(t);
    ASSERT_TRUE(w.add_tensor(std::string(traits.name), t, {256, 2},
                             std::vector<uint8_t>(row_bytes(traits, 512), 0x41))
                    .is_ok());
  }
  const auto bytes = w.to_bytes();
  ASSERT_TRUE(GgufFile::parse(bytes).is_ok());
  size_t failures = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = GgufFile::parse(std::span<const uint8_t>(bytes.data(), n));
    if (f.is_ok()) {
      touch_everything(*f);
    } else {
      ++failures;
      ASSERT_EQ(f.status().code(), StatusCode::kInvalidArgument) << n << ": " << f.status().to_string();
    }
  }
  EXPECT_GT(failures, bytes.size() - 64);  // only trailing padding may be cut
}

TEST(Corruption, RandomByteFlipsNeverCrash) {
  auto bytes = file_bytes(ladder::testing::shared_path("models/stories260K.gguf"));
  auto full = GgufFile::parse(bytes);
  ASSERT_TRUE(full.is_ok());
  const size_t header_end = full->data_offset();
  std::mt19937 rng(20261129);
  std::uniform_int_distribution<size_t> in_header(0, header_end - 1);
  std::uniform_int_distribution<size_t> anywhere(0, bytes.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> n_flips(1, 4);
  size_t ok = 0, failed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::pair<size_t, uint8_t>> saved;
    const int flips = n_flips(rng);
    for (int k = 0; k < flips; ++k) {
      // Mostly in the header, where a flipped byte changes the structure.
      const size_t at = iter % 8 == 0 ? anywhere(rng) : in_header(rng);
      saved.emplace_back(at, bytes[at]);
      // Half the time a single-bit flip, else a random byte.
      bytes[at] = iter % 2 == 0 ? static_cast<uint8_t>(bytes[at] ^ (1u << (byte(rng) % 8)))
                                : static_cast<uint8_t>(byte(rng));
    }
    auto f = GgufFile::parse(bytes);
    if (f.is_ok()) {
      ++ok;
      touch_everything(*f);
    } else {
      ++failed;
      const auto code = f.status().code();
      ASSERT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kUnimplemented)
          << f.status().to_string();
      ASSERT_EQ(f.status().message().rfind("gguf: ", 0), 0u);
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) bytes[it->first] = it->second;
  }
  // Both outcomes occur: flips inside string bytes parse, structural ones fail.
  EXPECT_GT(ok, 100u);
  EXPECT_GT(failed, 100u);
}

}  // namespace
}  // namespace ladder::gguf
