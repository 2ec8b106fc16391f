#include "ops/kernel_choice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ops/amx.h"
#include "ops/matmul.h"
#include "ops/packed_weights.h"
#include "ops/simd_targets.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::random_floats;
using testing::random_weights;

// Restores the process's kernel choice after a test changes it.
class KernelChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = kernel_choice(); }
  void TearDown() override { set_kernel_choice(saved_); }
  KernelChoice saved_;
};

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST_F(KernelChoiceTest, CacheRoundTripsAndRejectsMalformedFiles) {
  const std::string dir = temp_dir("ladder-kernel-choice");
  const std::string path = dir + "/nested/kernels.txt";
  KernelChoice c;
  c.decode_stream = {Prefetch::kT1, 16384};
  c.kquant_stream = {Prefetch::kT2, 4096};
  c.f32_stream = {Prefetch::kNone, 0};
  c.f16_stream = {Prefetch::kNta, 4096};
  c.repack_q32 = false;
  c.detail = "plain 10.0, T1+16K 20.0";
  ASSERT_TRUE(write_kernel_choice(path, c));
  const auto back = read_kernel_choice(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->decode_stream, c.decode_stream);
  EXPECT_EQ(back->kquant_stream, c.kquant_stream);
  EXPECT_EQ(back->f32_stream, c.f32_stream);
  EXPECT_EQ(back->f16_stream, c.f16_stream);
  EXPECT_FALSE(back->repack_q32);
  EXPECT_EQ(back->detail, c.detail);
  EXPECT_EQ(back->source, "cache " + path);
  // The last three but one: files of earlier versions (no kquant_stream;
  // one float_stream for every float type).
  const std::string k = "kquant_stream=plain\n";
  for (const std::string& bad : std::vector<std::string>{
           "decode_stream=T9+1K\n" + k + "f32_stream=plain\nf16_stream=plain\nrepack_q32=1\n",
           std::string(
               "decode_stream=plain\nkquant_stream=T2\nf32_stream=plain\nf16_stream=plain\nrepack_q32=1\n"),
           "decode_stream=plain\n" + k + "f32_stream=T7+4K\nf16_stream=plain\nrepack_q32=1\n",
           "decode_stream=plain\n" + k + "f32_stream=plain\nf16_stream=NTA\nrepack_q32=1\n",
           "decode_stream=plain\n" + k + "f32_stream=plain\nf16_stream=plain\n",
           k + "f32_stream=plain\nf16_stream=plain\nrepack_q32=1\n",
           "decode_stream=plain\n" + k + "f32_stream=plain\nf16_stream=plain\nrepack_q32=2\n",
           std::string("decode_stream=plain\nf32_stream=plain\nf16_stream=plain\nrepack_q32=1\n"),
           "decode_stream=plain\n" + k + "f16_stream=plain\nrepack_q32=1\n",
           "decode_stream=plain\n" + k + "float_stream=plain\nrepack_q32=1\n", std::string("garbage\n")}) {
    std::ofstream(path) << bad;
    EXPECT_FALSE(read_kernel_choice(path).has_value()) << bad;
  }
  EXPECT_FALSE(read_kernel_choice(dir + "/missing.txt").has_value());
  std::filesystem::remove_all(dir);
}

TEST_F(KernelChoiceTest, CachePathHonoursXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  const std::string path = kernel_choice_cache_path();
  EXPECT_EQ(path.rfind("/tmp/xdg-test/ladder/kernels-v", 0), 0u) << path;
  EXPECT_NE(path.find(active_target_name()), std::string::npos) << path;
  if (old) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
}

// Prefetching changes speed, never bits: every candidate strategy gives the
// plain-load result for decode (one row) on the float, stored and packed
// kernels.
TEST_F(KernelChoiceTest, EveryStreamStrategyGivesTheSameBits) {
  ThreadPool pool(2);
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0,
                          TensorType::kQ4_K, TensorType::kQ6_K}) {
    SCOPED_TRACE(tensor_type_name(type));
    const int64_t n_in = 512, n_out = 72;
    const auto w = random_weights(type, n_in, n_out, 7);
    const WeightMatrix wm{type, w.data(), n_in, n_out};
    const PackedWeights packed = pack_weights_always(wm, pool);
    const auto x = random_floats(n_in, 8);
    std::vector<float> want(n_out), got(n_out);
    KernelChoice c = kernel_choice();
    c.decode_stream = {};
    c.kquant_stream = {};
    c.f32_stream = {};
    c.f16_stream = {};
    set_kernel_choice(c);
    matmul(wm, packed, x.data(), 1, want.data(), pool);
    for (const StreamStrategy& s : candidate_stream_strategies()) {
      c.decode_stream = s;
      c.kquant_stream = s;
      c.f32_stream = s;
      c.f16_stream = s;
      set_kernel_choice(c);
      matmul(wm, packed, x.data(), 1, got.data(), pool);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << to_string(s);
    }
  }
}

// Q8_0 and Q4_0 stay as stored where the choice says so (unless AMX tiles,
// which read the packed layout, serve their batches); the K-quants are
// packed whenever the target can; the bits are the same either way.
TEST_F(KernelChoiceTest, PackWeightsFollowsTheChoice) {
  ThreadPool pool(2);
  const bool packs = has_packed_layout(TensorType::kQ8_0);
  KernelChoice c = kernel_choice();
  for (bool repack : {true, false}) {
    c.repack_q32 = repack;
    set_kernel_choice(c);
    set_amx_enabled(false);
    for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K}) {
      const auto w = random_weights(type, 256, 32, 9);
      const WeightMatrix wm{type, w.data(), 256, 32};
      const PackedWeights p = pack_weights(wm, pool);
      const bool q32 = type != TensorType::kQ4_K;
      EXPECT_EQ(!p.empty(), packs && (repack || !q32)) << tensor_type_name(type) << " repack " << repack;
      const auto x = random_floats(3 * 256, 10);
      std::vector<float> a(3 * 32), b(3 * 32);
      matmul(wm, p, x.data(), 3, a.data(), pool);
      matmul(wm, pack_weights_always(wm, pool), x.data(), 3, b.data(), pool);
      if (q32) {
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
      }
    }
    set_amx_enabled(true);
  }
}

// Each weight family streams under its own strategy: Q8_0/Q4_0 (and the
// other block types the integer kernels read) under decode_stream, the
// K-quants under kquant_stream, F32 and F16/BF16 under theirs.
TEST(KernelChoice, EachWeightFamilyGetsItsOwnStream) {
  KernelChoice c;
  c.decode_stream = {Prefetch::kT0, 1024};
  c.kquant_stream = {Prefetch::kT1, 4096};
  c.f32_stream = {Prefetch::kT2, 4096};
  c.f16_stream = {Prefetch::kNta, 16384};
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ4_1}) {
    EXPECT_EQ(stream_for(c, t), c.decode_stream) << tensor_type_name(t);
  }
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    EXPECT_EQ(stream_for(c, t), c.kquant_stream) << tensor_type_name(t);
  }
  EXPECT_EQ(stream_for(c, TensorType::kF32), c.f32_stream);
  EXPECT_EQ(stream_for(c, TensorType::kF16), c.f16_stream);
  EXPECT_EQ(stream_for(c, TensorType::kBF16), c.f16_stream);
}

TEST(KernelFingerprint, NamesTheTargetAndTheKQuantLayout) {
  const std::string f = kernel_fingerprint();
  EXPECT_EQ(f.rfind(active_target_name(), 0), 0u) << f;
  EXPECT_EQ(f.find("kq=packed16") != std::string::npos, has_packed_layout(TensorType::kQ4_K)) << f;
  // Stable within a process (a configuration fingerprint hashes it).
  EXPECT_EQ(f, kernel_fingerprint());
}

TEST(KernelChoice, DescribesTheActivePaths) {
  const std::string d = describe_kernel_paths();
  EXPECT_NE(d.find("kernel fingerprint: " + kernel_fingerprint()), std::string::npos) << d;
  const KernelChoice& c = kernel_choice();
  EXPECT_NE(d.find("decode streaming: " + to_string(c.decode_stream) + " for Q8_0/Q4_0, " +
                   to_string(c.kquant_stream) + " for K-quants, " + to_string(c.f32_stream) + " for F32, " +
                   to_string(c.f16_stream) + " for F16/BF16"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("AMX:"), std::string::npos) << d;
}

}  // namespace
}  // namespace ladder::ops
