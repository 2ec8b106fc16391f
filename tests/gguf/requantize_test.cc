// Requantizing whole files (gguf/requantize.h): which type each tensor gets
// (llama.cpp's conventions, fallbacks, refusals), that metadata and 1-D
// tensors are copied exactly, and that every converted matrix dequantizes
// (with the scalar reference of quant.h) to within a stated error of its
// source, on random weights and on the real stories260K model.
#include "gguf/requantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "gguf/gguf_writer.h"
#include "gguf/quant.h"
#include "test_support.h"

namespace ladder::gguf {
namespace {

using ladder::testing::read_file;
using ladder::testing::shared_path;
using ladder::testing::temp_dir;

bool same_value(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (const Array* x = a.as_array()) {
    const Array* y = b.as_array();
    if (x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i) {
      if (!same_value(x->items[i], y->items[i])) return false;
    }
    return true;
  }
  return a.as_string() == b.as_string() && a.as_uint() == b.as_uint() && a.as_int() == b.as_int() &&
         a.as_float() == b.as_float() && a.as_bool() == b.as_bool();
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> gaussian(size_t n, uint32_t seed, float std) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, std);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A llama-shaped file with F32 Gaussian matrices: rows of 256 (every block
// size fits) except ffn_down's rows of 96 (32 fits, 256 does not), a norm
// vector and some metadata.
std::string write_source(bool tied, const std::string& name) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "requantize-source");
  w.set_u32("llama.embedding_length", 256);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set("tokenizer.ggml.tokens",
        Value::make_array(ValueType::kString, {Value::make_string("a"), Value::make_string("b")}));
  uint32_t seed = 1;
  auto matrix = [&](const std::string& n, uint64_t n_in, uint64_t n_out) {
    EXPECT_TRUE(
        w.add_tensor(n, TensorType::kF32, {n_in, n_out}, f32_bytes(gaussian(n_in * n_out, seed++, 0.05f)))
            .is_ok());
  };
  matrix("token_embd.weight", 256, 300);
  EXPECT_TRUE(
      w.add_tensor("blk.0.attn_norm.weight", TensorType::kF32, {256}, f32_bytes(gaussian(256, 99, 1.0f)))
          .is_ok());
  matrix("blk.0.attn_q.weight", 256, 256);
  matrix("blk.0.ffn_up.weight", 256, 96);
  matrix("blk.0.ffn_down.weight", 96, 256);
  if (!tied) matrix("output.weight", 256, 300);
  const std::string path = temp_dir() + "/" + name + ".gguf";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

GgufFile open_or_fail(const std::string& path) {
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  return std::move(f).value();
}

std::map<std::string, TensorType> planned_types(const GgufFile& in, const RequantizeOptions& o) {
  auto plan = plan_requantize(in, o);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  std::map<std::string, TensorType> out;
  if (plan.is_ok()) {
    for (const auto& p : *plan) out[p.name] = p.to;
  }
  return out;
}

TEST(RequantizePlan, FollowsLlamaCppConventions) {
  const GgufFile in = open_or_fail(write_source(false, "plan_untied"));
  RequantizeOptions o;
  o.dtype = TensorType::kQ4_0;
  auto t = planned_types(in, o);
  EXPECT_EQ(t["blk.0.attn_q.weight"], TensorType::kQ4_0);
  EXPECT_EQ(t["blk.0.ffn_down.weight"], TensorType::kQ4_0);  // rows of 96 fit blocks of 32
  EXPECT_EQ(t["token_embd.weight"], TensorType::kQ4_0);
  EXPECT_EQ(t["output.weight"], TensorType::kQ6_K);
  EXPECT_EQ(t["blk.0.attn_norm.weight"], TensorType::kF32);
  o.dtype = TensorType::kQ8_0;
  EXPECT_EQ(planned_types(in, o)["output.weight"], TensorType::kQ8_0);
  o.dtype = TensorType::kF16;
  t = planned_types(in, o);
  EXPECT_EQ(t["output.weight"], TensorType::kF16);
  EXPECT_EQ(t["blk.0.attn_norm.weight"], TensorType::kF32);
  o.dtype = TensorType::kQ5_1;
  o.output_dtype = TensorType::kQ8_0;
  o.embd_dtype = TensorType::kF16;
  t = planned_types(in, o);
  EXPECT_EQ(t["output.weight"], TensorType::kQ8_0);
  EXPECT_EQ(t["token_embd.weight"], TensorType::kF16);
  EXPECT_EQ(t["blk.0.attn_q.weight"], TensorType::kQ5_1);

  // Tied: token_embd.weight is the output head and takes the output's rule.
  const GgufFile tied = open_or_fail(write_source(true, "plan_tied"));
  RequantizeOptions ot;
  ot.dtype = TensorType::kQ4_1;
  EXPECT_EQ(planned_types(tied, ot)["token_embd.weight"], TensorType::kQ6_K);
}

TEST(RequantizePlan, RowsThatDoNotFitAreRefusedOrFallBack) {
  const GgufFile in = open_or_fail(write_source(false, "plan_fallback"));
  RequantizeOptions o;
  o.dtype = TensorType::kQ4_K;
  auto refused = plan_requantize(in, o);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = refused.status().message();
  for (const char* part : {"blk.0.ffn_down.weight", "96", "Q4_K", "256", "--fallback"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
  o.fallback = {Fallback::Kind::kAuto, TensorType::kF16};
  auto plan = plan_requantize(in, o);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  for (const auto& p : *plan) {
    if (p.name == "blk.0.ffn_down.weight") {
      EXPECT_EQ(p.to, TensorType::kQ5_0);
      EXPECT_TRUE(p.fell_back);
    } else {
      EXPECT_FALSE(p.fell_back) << p.name;
    }
  }
  o.dtype = TensorType::kQ6_K;
  EXPECT_EQ(planned_types(in, o)["blk.0.ffn_down.weight"], TensorType::kQ8_0);
  o.fallback = {Fallback::Kind::kType, TensorType::kBF16};
  EXPECT_EQ(planned_types(in, o)["blk.0.ffn_down.weight"], TensorType::kBF16);
  // A fallback that does not fit either is refused, naming both types.
  o.fallback = {Fallback::Kind::kType, TensorType::kQ5_K};
  auto neither = plan_requantize(in, o);
  ASSERT_FALSE(neither.is_ok());
  EXPECT_NE(neither.status().message().find("Q5_K"), std::string::npos) << neither.status().message();
}

TEST(RequantizePlan, ParsesTypesAndFallbacks) {
  EXPECT_EQ(parse_requantize_target("q4_k").value(), TensorType::kQ4_K);
  EXPECT_EQ(parse_requantize_target("BF16").value(), TensorType::kBF16);
  for (const char* bad : {"q8_k", "q2_k", "int4", ""}) {
    auto r = parse_requantize_target(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("q6_k"), std::string::npos) << "the choices are listed";
  }
  EXPECT_EQ(parse_fallback("refuse").value().kind, Fallback::Kind::kRefuse);
  EXPECT_EQ(parse_fallback("auto").value().kind, Fallback::Kind::kAuto);
  EXPECT_EQ(parse_fallback("f16").value().type, TensorType::kF16);
  EXPECT_FALSE(parse_fallback("sometimes").is_ok());
}

// Relative RMSE of a converted matrix against its source, through the scalar
// dequantizer.
double relative_rmse(const TensorInfo& src, const TensorInfo& dst) {
  const size_t n_in = src.shape[0], rows = src.n_rows();
  const size_t rb_src = row_bytes(traits_of(src.type), n_in), rb_dst = row_bytes(traits_of(dst.type), n_in);
  std::vector<float> a(n_in), b(n_in);
  double se = 0, ss = 0;
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(dequantize_row(src.type, src.data + r * rb_src, a.data(), n_in).is_ok());
    EXPECT_TRUE(dequantize_row(dst.type, dst.data + r * rb_dst, b.data(), n_in).is_ok());
    for (size_t i = 0; i < n_in; ++i) se += double(a[i] - b[i]) * (a[i] - b[i]), ss += double(a[i]) * a[i];
  }
  return std::sqrt(se / ss);
}

// Bounds on the relative RMSE of Gaussian-like weights: about a third of the
// format's step over the values' spread, with room for the real model's
// heavier tails.
double rmse_bound(TensorType t) {
  switch (t) {
    case TensorType::kF32: return 0.0;
    case TensorType::kF16: return 5e-4;
    case TensorType::kBF16: return 4e-3;
    case TensorType::kQ8_0: return 0.01;
    case TensorType::kQ6_K: return 0.035;
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ5_K: return 0.06;
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ4_K: return 0.13;
    default: break;
  }
  ADD_FAILURE() << "no bound for " << tensor_type_name(t);
  return 0;
}

// Converts `src` with defaults (fallback auto) and checks the result tensor by
// tensor; prints the measured errors.
void check_requantized(const std::string& src_path, TensorType type, const std::string& out_name) {
  const GgufFile in = open_or_fail(src_path);
  RequantizeOptions o;
  o.dtype = type;
  o.fallback = {Fallback::Kind::kAuto, TensorType::kF16};
  const std::string out_path = temp_dir() + "/" + out_name + ".gguf";
  uint64_t last_done = 0, last_total = 1;
  auto stats = requantize_file(in, out_path, o, [&](uint64_t done, uint64_t total, const std::string&) {
    EXPECT_GE(done, last_done);
    last_done = done, last_total = total;
  });
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  EXPECT_EQ(last_done, last_total);
  const GgufFile out = open_or_fail(out_path);
  EXPECT_EQ(out.get_uint("general.file_type").is_ok(), true);
  // Metadata: every key of the source, same values, same order.
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.file_type" || key == "general.quantization_version") continue;
    const Value* v = out.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_TRUE(same_value(*v, value)) << key;
  }
  const auto plan = plan_requantize(in, o).value();
  ASSERT_EQ(out.tensors().size(), in.tensors().size());
  std::map<TensorType, double> worst;
  for (const auto& p : plan) {
    const TensorInfo& s = *in.find_tensor(p.name);
    const TensorInfo* d = out.find_tensor(p.name);
    ASSERT_NE(d, nullptr) << p.name;
    EXPECT_EQ(d->type, p.to) << p.name;
    EXPECT_EQ(d->shape, s.shape) << p.name;
    if (p.to == p.from) {
      EXPECT_EQ(std::memcmp(d->data, s.data, s.n_bytes), 0) << p.name << " copied byte for byte";
      continue;
    }
    const double e = relative_rmse(s, *d);
    worst[p.to] = std::max(worst[p.to], e);
    EXPECT_LE(e, rmse_bound(p.to)) << p.name << " as " << tensor_type_name(p.to);
  }
  for (const auto& [to, e] : worst) {
    std::printf("--dtype %-4s: matrices as %-4s worst relative RMSE %.4f (bound %.4f)\n",
                std::string(tensor_type_name(type)).c_str(), std::string(tensor_type_name(to)).c_str(), e,
                rmse_bound(to));
  }
}

class RequantizeTypes : public ::testing::TestWithParam<TensorType> {};

TEST_P(RequantizeTypes, RandomWeightsRoundTripWithinBounds) {
  const std::string name(tensor_type_name(GetParam()));
  check_requantized(write_source(false, "src_" + name), GetParam(), "random_" + name);
}

TEST_P(RequantizeTypes, Stories260KRoundTripsWithinBounds) {
  const std::string name(tensor_type_name(GetParam()));
  check_requantized(shared_path("models/stories260K.gguf"), GetParam(), "stories_" + name);
}

INSTANTIATE_TEST_SUITE_P(Targets, RequantizeTypes,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ8_0, TensorType::kQ6_K, TensorType::kQ5_K,
                                           TensorType::kQ5_1, TensorType::kQ5_0, TensorType::kQ4_K,
                                           TensorType::kQ4_1, TensorType::kQ4_0),
                         [](const auto& p) { return std::string(tensor_type_name(p.param)); });

TEST(Requantize, FromQuantizedSourcesAndBack) {
  const GgufFile src = open_or_fail(write_source(false, "src_chain"));
  RequantizeOptions o;
  o.dtype = TensorType::kQ8_0;
  const std::string q8 = temp_dir() + "/chain_q8.gguf";
  ASSERT_TRUE(requantize_file(src, q8, o).is_ok());
  const GgufFile q8f = open_or_fail(q8);
  // Q8_0 -> Q8_0 copies; Q8_0 -> F32 is exactly the dequantized values.
  const std::string again = temp_dir() + "/chain_q8_again.gguf";
  auto copied = requantize_file(q8f, again, o);
  ASSERT_TRUE(copied.is_ok());
  EXPECT_EQ(copied->converted, 0);
  EXPECT_EQ(read_file(again), read_file(q8));
  o.dtype = TensorType::kF32;
  const std::string f32 = temp_dir() + "/chain_f32.gguf";
  ASSERT_TRUE(requantize_file(q8f, f32, o).is_ok());
  const GgufFile f32f = open_or_fail(f32);
  const TensorInfo& q = *q8f.find_tensor("blk.0.attn_q.weight");
  const TensorInfo& f = *f32f.find_tensor("blk.0.attn_q.weight");
  ASSERT_EQ(f.type, TensorType::kF32);
  std::vector<float> want(q.n_elements);
  ASSERT_TRUE(dequantize_row(q.type, q.data, want.data(), want.size()).is_ok());
  EXPECT_EQ(std::memcmp(f.data, want.data(), f.n_bytes), 0);
}

TEST(Requantize, RefusesToOverwriteItsInputAndLeavesNoPartialFile) {
  const std::string path = write_source(false, "src_self");
  const GgufFile in = open_or_fail(path);
  RequantizeOptions o;
  auto r = requantize_file(in, path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("overwrite"), std::string::npos) << r.status().message();
  // A refused plan writes nothing.
  o.dtype = TensorType::kQ4_K;
  const std::string out = temp_dir() + "/refused.gguf";
  EXPECT_FALSE(requantize_file(in, out, o).is_ok());
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  // An unwritable destination is an I/O error, not a crash.
  o.dtype = TensorType::kQ8_0;
  auto io = requantize_file(in, temp_dir() + "/no/such/dir/out.gguf", o);
  ASSERT_FALSE(io.is_ok());
  EXPECT_EQ(io.status().code(), StatusCode::kIo);
}

}  // namespace
}  // namespace ladder::gguf
