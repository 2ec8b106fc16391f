#include "ops/kernel_choice.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "common/env_switch.h"
#include "common/half.h"
#include "common/tensor_type.h"
#include "hwy/aligned_allocator.h"
#include "ops/amx.h"
#include "ops/bf16_dot.h"
#include "ops/matmul_simd.h"
#include "ops/paired_choice.h"
#include "ops/simd_targets.h"
#include "ops/thread_pool.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ladder::ops {
namespace {

// Bump when the candidates or the measurement change, so old caches are
// ignored rather than trusted.
constexpr int kCacheVersion = 7;

// The calibration matrices: 2048 x 32768 of Q8_0 (about 68 MiB) and of
// Q4_0 (36 MiB), 2048 x 16384 of Q4_K (18 MiB), Q6_K (26 MiB) and F16, and
// 2048 x 8192 of F32 (64 MiB each), beyond the private caches; with the
// eviction read below, every pass streams them from memory.
constexpr int64_t kCalIn = 2048;
constexpr int64_t kCalOut = 32768;
constexpr int64_t kCalFloatBytes = int64_t{64} << 20;
// Read (plain loads) before every timed pass, so that each pass starts the
// way a model's matmul does: the caches full of other data, none of the
// matrix about to be read. Without it a pass found the tail of the previous
// pass over the same matrix still in the last-level cache, and a strategy
// whose loads do not allocate there (NTA) kept that tail and read part of
// the matrix from the cache: it led screens at x1.04-1.20 and ran slower
// in the engine (docs/BENCHMARKS.md). As large as a calibration matrix: the
// calibration already assumes its matrices stream past the last-level
// cache (CPUID's cache sizes do not help: a VM may report the socket's).
constexpr size_t kCalEvictBytes = size_t{64} << 20;
// Rounds of the screen and of the confirmation (ops/paired_choice.h): on
// simulated noise harsher than a shared 2-vCPU VM's, they leave plain loads
// for equal candidates in under 0.5% of calibrations and take one 15%
// faster in over 96% (tests/ops/paired_choice_test.cc).
constexpr int kScreenRounds = 12;
constexpr int kConfirmRounds = 24;

// The CPU as CPUID names it: brand string and family/model/stepping (a VM's
// brand string is often generic, e.g. "Intel(R) Xeon(R) Processor", while the
// model number still tells generations apart).
std::string cpu_identity() {
#if defined(__x86_64__)
  unsigned r[4] = {};
  std::string brand;
  for (unsigned leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
    if (__get_cpuid(leaf, &r[0], &r[1], &r[2], &r[3]) == 0) break;
    brand.append(reinterpret_cast<const char*>(r), sizeof(r));
  }
  brand = brand.c_str();  // drop trailing NULs
  unsigned a = 0, b = 0, c = 0, d = 0;
  __get_cpuid(1, &a, &b, &c, &d);
  const unsigned family = ((a >> 8) & 0xF) + ((a >> 20) & 0xFF);
  const unsigned model = ((a >> 4) & 0xF) | (((a >> 16) & 0xF) << 4);
  const unsigned stepping = a & 0xF;
  return fmt::format("{} family {} model {} stepping {}", brand.empty() ? "x86-64" : brand, family, model,
                     stepping);
#else
  return "unknown CPU";
#endif
}

std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/ladder";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/ladder";
  return "";
}

}  // namespace

// kernels-v<kCacheVersion>-<identity and target, as a file name>.txt
std::string kernel_choice_cache_path() {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  std::string key = cpu_identity() + " " + active_target_name();
  for (char& ch : key) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return fmt::format("{}/kernels-v{}-{}.txt", dir, kCacheVersion, key);
}

namespace {

bool calibration_disabled() {
  return env_switched_off("LADDER_KERNEL_CALIBRATION");
}

}  // namespace

std::optional<KernelChoice> read_kernel_choice(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  KernelChoice c;
  bool have_stream = false, have_kquant = false, have_f32 = false, have_f16 = false, have_repack = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "decode_stream") {
      auto s = parse_stream_strategy(value);
      if (!s.is_ok()) return std::nullopt;
      c.decode_stream = s.value();
      have_stream = true;
    } else if (key == "kquant_stream") {
      auto s = parse_stream_strategy(value);
      if (!s.is_ok()) return std::nullopt;
      c.kquant_stream = s.value();
      have_kquant = true;
    } else if (key == "f32_stream" || key == "f16_stream") {
      auto s = parse_stream_strategy(value);
      if (!s.is_ok()) return std::nullopt;
      (key == "f32_stream" ? c.f32_stream : c.f16_stream) = s.value();
      (key == "f32_stream" ? have_f32 : have_f16) = true;
    } else if (key == "repack_q32") {
      if (value != "0" && value != "1") return std::nullopt;
      c.repack_q32 = value == "1";
      have_repack = true;
    } else if (key == "detail") {
      c.detail = value;
    }
  }
  if (!have_stream || !have_kquant || !have_f32 || !have_f16 || !have_repack) return std::nullopt;
  c.source = "cache " + path;
  return c;
}

bool write_kernel_choice(const std::string& path, const KernelChoice& c) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Write then rename: concurrent processes never read half a file.
  const std::string tmp =
      fmt::format("{}.{}.tmp", path, std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp);
    if (!out) return false;
    out << "# Ladder's decode kernel choice for " << cpu_identity() << ", target " << active_target_name()
        << " (delete to measure again)\n";
    out << "decode_stream=" << to_string(c.decode_stream) << "\n";
    out << "kquant_stream=" << to_string(c.kquant_stream) << "\n";
    out << "f32_stream=" << to_string(c.f32_stream) << "\n";
    out << "f16_stream=" << to_string(c.f16_stream) << "\n";
    out << "repack_q32=" << (c.repack_q32 ? 1 : 0) << "\n";
    out << "detail=" << c.detail << "\n";
    if (!out.flush()) return false;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread, nanoseconds.
int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Random rows of blocks with small finite scales: Q8_0 and Q4_0 (d first),
// Q4_K (d and dmin first) or Q6_K (d last); the other bytes (quants, and the
// K-quants' 6- and 8-bit sub-block scales) are any bytes.
void fill_blocks(TensorType type, uint8_t* data, size_t bytes, uint32_t seed) {
  std::minstd_rand rng(seed);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(rng() & 0xFF);
  const size_t block = traits_of(type).block_bytes;
  const uint16_t d = f32_to_f16(0.01f);
  std::vector<size_t> scales = {0};
  if (type == TensorType::kQ4_K) scales = {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
  if (type == TensorType::kQ6_K) scales = {offsetof(BlockQ6_K, d)};
  for (size_t b = 0; b + block <= bytes; b += block) {
    for (size_t at : scales) std::memcpy(data + b + at, &d, 2);
  }
}

KernelChoice fallback(const std::string& why) {
  KernelChoice c;
  c.source = "fallback (" + why + ")";
  return c;
}

// One calibration matrix: as stored and packed, with one activation row.
struct CalMatrix {
  TensorType type;
  int64_t n_out;
  hwy::AlignedFreeUniquePtr<uint8_t[]> stored, packed;
  size_t packed_bytes = 0;
  detail::MatmulTask t;

  CalMatrix(TensorType ty, int64_t out, ThreadPool& pool, const detail::MatmulTask& row)
      : type(ty), n_out(out) {
    const size_t rb = row_bytes(traits_of(type), kCalIn);
    stored = hwy::AllocateAligned<uint8_t>(rb * static_cast<size_t>(n_out));
    pool.parallel_for(n_out, 256, [&](int64_t b, int64_t e) {
      fill_blocks(type, stored.get() + b * rb, static_cast<size_t>(e - b) * rb, static_cast<uint32_t>(b + 1));
    });
    t = row;
    t.type = type;
    t.w = stored.get();
    t.w_row_bytes = rb;
    t.y_stride = n_out;
    packed_bytes = detail::packed_bytes(type, kCalIn, n_out);
    packed = hwy::AllocateAligned<uint8_t>(packed_bytes);
    pool.parallel_for(n_out / 16, 1,
                      [&](int64_t b, int64_t e) { detail::pack_groups(t, b, e, packed.get()); });
    if (type != TensorType::kQ8_0) {  // only Q8_0 is also timed as stored
      stored.reset();
      t.w = nullptr;
    }
  }
};

// A float calibration matrix (F32 or F16, kCalFloatBytes of random weights
// in [-1, 1]), packed where the target packs float weights (as models load
// them), else as stored.
struct CalFloatMatrix {
  hwy::AlignedFreeUniquePtr<uint8_t[]> data;
  size_t bytes = 0;
  bool packed = false;
  detail::MatmulTask t;

  CalFloatMatrix(TensorType type, ThreadPool& pool, const float* x, float* y) {
    const size_t elem = type == TensorType::kF32 ? sizeof(float) : sizeof(uint16_t);
    const size_t rb = static_cast<size_t>(kCalIn) * elem;
    const int64_t n_out = kCalFloatBytes / static_cast<int64_t>(rb);
    auto stored = hwy::AllocateAligned<uint8_t>(rb * static_cast<size_t>(n_out));
    pool.parallel_for(n_out, 256, [&](int64_t b, int64_t e) {
      std::minstd_rand rng(static_cast<uint32_t>(b + 1));
      uint8_t* row = stored.get() + static_cast<size_t>(b) * rb;
      for (int64_t i = 0; i < (e - b) * kCalIn; ++i) {
        const float v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
        if (type == TensorType::kF32) {
          std::memcpy(row + i * 4, &v, 4);
        } else {
          const uint16_t h = f32_to_f16(v);
          std::memcpy(row + i * 2, &h, 2);
        }
      }
    });
    t.type = type;
    t.n_in = kCalIn;
    t.rows = 1;
    t.x = x;
    t.y = y;
    t.w = stored.get();
    t.w_row_bytes = rb;
    t.y_stride = n_out;
    bytes = rb * static_cast<size_t>(n_out);
    packed = detail::has_float_packed();
    if (!packed) {
      data = std::move(stored);
      return;
    }
    data = hwy::AllocateAligned<uint8_t>(detail::float_packed_bytes(t.type, kCalIn, n_out));
    const int64_t group = detail::float_pack_group_cols();
    pool.parallel_for((n_out + group - 1) / group, 1,
                      [&](int64_t b, int64_t e) { detail::pack_float_groups(t, b, e, data.get()); });
    t.w = nullptr;  // the kernel reads `data`
  }

  void cols(const detail::MatmulTask& ts, int64_t b, int64_t e) const {
    if (packed) {
      detail::matmul_float_packed_cols(ts, data.get(), b, e);
    } else {
      detail::matmul_float_cols(ts, b, e);
    }
  }
};

}  // namespace

KernelChoice calibrate_kernel_choice() {
  if (!detail::has_packed(TensorType::kQ8_0)) {
    return fallback("no packed kernels on " + active_target_name() + "; plain loads");
  }
  ThreadPool pool(0);
  // One activation row, quantized, with its sums per 32 (packed Q8_0 and Q4_0).
  std::vector<float> x(kCalIn);
  std::minstd_rand rng(5);
  for (float& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  std::vector<int8_t> xq(kCalIn);
  std::vector<uint8_t> xu(kCalIn);
  std::vector<float> xd(kCalIn / detail::kActBlock), xsum(kCalIn / detail::kActBlock), y(kCalOut);
  std::vector<int32_t> sums32(kCalIn / 32), sums16(kCalIn / 16);
  detail::quantize_activations_simd(x.data(), 1, kCalIn, xq.data(), xu.data(), xd.data(), xsum.data());
  for (int64_t j = 0; j < kCalIn; ++j) {
    sums32[static_cast<size_t>(j / 32)] += xq[static_cast<size_t>(j)];
    sums16[static_cast<size_t>(j / 16)] += xq[static_cast<size_t>(j)];
  }
  detail::MatmulTask row;
  row.n_in = kCalIn;
  row.rows = 1;
  row.xq = xq.data();
  row.xu = xu.data();
  row.xd = xd.data();
  row.xsum = xsum.data();
  row.y = y.data();
  // Q8_0 (one byte a weight, little work per byte) and Q4_0 (half a byte,
  // twice the work per byte): the strategy must serve both kinds of stream.
  // Q4_K and Q6_K (super-blocks: more scales and unpacking per byte) are
  // timed apart, for the K-quants' own strategy.
  CalMatrix mats[] = {{TensorType::kQ8_0, kCalOut, pool, row},
                      {TensorType::kQ4_0, kCalOut, pool, row},
                      {TensorType::kQ4_K, kCalOut / 2, pool, row},
                      {TensorType::kQ6_K, kCalOut / 2, pool, row}};
  // F32 and F16 (BF16 runs the F16 kernel's shape), each timed apart: one
  // FMA per load, over 64 or 32 bytes of weights, want their own streams.
  const CalFloatMatrix fmats[] = {{TensorType::kF32, pool, x.data(), y.data()},
                                  {TensorType::kF16, pool, x.data(), y.data()}};

  // Other data to pass through the caches before each timed pass
  // (kCalEvictBytes), every word summed: a loop the compiler vectorizes,
  // which streams at the memory's speed (one load per 64-byte line ran at
  // half of it, and took 40% of the calibration); the sum keeps the reads.
  const auto evict = hwy::AllocateAligned<uint64_t>(kCalEvictBytes / sizeof(uint64_t));
  constexpr int64_t kPage = 4096 / sizeof(uint64_t);
  const int64_t evict_pages = static_cast<int64_t>(kCalEvictBytes / 4096);
  pool.parallel_for(evict_pages, 64, [&](int64_t b, int64_t e) {
    std::fill(evict.get() + b * kPage, evict.get() + e * kPage, uint64_t{1});
  });
  std::atomic<uint64_t> evict_sum{0};
  // Seconds per pass over a matrix, as CPU time of the threads that ran it
  // divided by their number: a thread that a shared machine deschedules for
  // a while does not count that while against the strategy it was running.
  // The eviction read before it is not timed.
  auto time_pass = [&](int64_t n_out, const std::function<void(int64_t, int64_t)>& cols) {
    pool.parallel_for(evict_pages, 64, [&](int64_t b, int64_t e) {
      uint64_t sum = 0;
      for (int64_t i = b * kPage; i < e * kPage; ++i) sum += evict[static_cast<size_t>(i)];
      evict_sum.fetch_add(sum, std::memory_order_relaxed);
    });
    std::atomic<int64_t> cpu_ns{0};
    pool.parallel_for(n_out, 64, [&](int64_t b, int64_t e) {
      const int64_t t0 = thread_cpu_ns();
      cols(b, e);
      cpu_ns.fetch_add(thread_cpu_ns() - t0, std::memory_order_relaxed);
    });
    return static_cast<double>(cpu_ns.load()) * 1e-9 / pool.size();
  };
  const std::vector<StreamStrategy> candidates = candidate_stream_strategies();  // [0] is plain loads
  const size_t n_cand = candidates.size();
  // One pass over workload w (packed Q8_0, Q4_0, Q4_K, Q6_K, then F32, F16) under a strategy.
  auto time_workload = [&](size_t w, const StreamStrategy& s) {
    if (w < 4) {
      detail::MatmulTask ts = mats[w].t;
      ts.stream = s;
      const int64_t group = detail::packed_sum_group(ts.type);
      const int32_t* sums = group == 32 ? sums32.data() : group == 16 ? sums16.data() : nullptr;
      return time_pass(mats[w].n_out, [&](int64_t b, int64_t e) {
        detail::matmul_packed_cols(ts, mats[w].packed.get(), sums, b, e);
      });
    }
    const CalFloatMatrix& fm = fmats[w - 4];
    detail::MatmulTask tf = fm.t;
    tf.stream = s;
    return time_pass(tf.y_stride, [&](int64_t b, int64_t e) { fm.cols(tf, b, e); });
  };
  auto time_stored_q8 = [&] {
    return time_pass(mats[0].n_out, [&](int64_t b, int64_t e) { detail::matmul_int_cols(mats[0].t, b, e); });
  };
  // The workloads: 0-5 packed Q8_0, Q4_0, Q4_K, Q6_K, F32 and F16 under
  // each candidate strategy; 6 packed Q8_0 under plain loads (0) against
  // Q8_0 as stored (1). The contests: Q8_0 and Q4_0 judged together (the
  // strategy must serve both kinds of stream), Q4_K and Q6_K together, F32,
  // F16, and the layout (Q8_0 and Q4_0 stay repacked, the fallback, unless
  // Q8_0 as stored wins).
  constexpr size_t kLayout = 6;
  const std::vector<size_t> n_candidates = {n_cand, n_cand, n_cand, n_cand, n_cand, n_cand, 2};
  const std::vector<PairedContest> contests = {{{0, 1}}, {{2, 3}}, {{4}}, {{5}}, {{kLayout}}};
  // Every pass under plain loads (and of Q8_0 as stored), for the speeds
  // the report shows, by workload.
  std::array<std::vector<double>, kLayout + 1> plain_passes;
  const PassTimer timer = [&](size_t w, size_t i) {
    const double t = w < kLayout ? time_workload(w, candidates[i])
                     : i == 0    ? time_workload(0, candidates[0])
                                 : time_stored_q8();
    if (w < kLayout && i == 0) plain_passes[w].push_back(t);
    if (w == kLayout && i == 1) plain_passes[kLayout].push_back(t);
    return t;
  };
  PairedProtocol protocol;
  protocol.screen_rounds = kScreenRounds;
  protocol.confirm_rounds = kConfirmRounds;
  const std::vector<ContestOutcome> out = run_paired_contests(n_candidates, contests, timer, protocol);

  KernelChoice c;
  c.decode_stream = candidates[out[0].chosen];
  c.kquant_stream = candidates[out[1].chosen];
  c.f32_stream = candidates[out[2].chosen];
  c.f16_stream = candidates[out[3].chosen];
  c.repack_q32 = out[4].chosen == 0;
  std::vector<std::string> names;
  for (const StreamStrategy& s : candidates) names.push_back(to_string(s));
  const char* what[] = {"Q8_0+Q4_0", "Q4_K+Q6_K", "F32", "F16", "Q8_0 layout"};
  std::string screen_text, confirm_text;
  for (size_t k = 0; k < out.size(); ++k) {
    const std::vector<std::string> contest_names =
        k == 4 ? std::vector<std::string>{"repacked", "as stored"} : names;
    const std::string sep = k == 0 ? "" : "; ";
    screen_text +=
        fmt::format("{}{}: {}", sep, what[k], describe_paired_choice(out[k].screen, contest_names));
    if (out[k].leader == 0) {
      confirm_text += fmt::format("{}{}: none led", sep, what[k]);
      continue;
    }
    const PairedChoice& cf = out[k].confirmed;
    confirm_text +=
        fmt::format("{}{}: {} x{:.2f} in {}/{}, {}", sep, what[k], contest_names[out[k].leader],
                    cf.speedup[1], cf.wins[1], cf.rounds, out[k].chosen != 0 ? "taken" : "not taken");
  }
  auto gbps = [](size_t bytes, const std::vector<double>& t) {
    return static_cast<double>(bytes) / median(t) / 1e9;
  };
  const size_t stored_bytes = row_bytes(traits_of(TensorType::kQ8_0), kCalIn) * kCalOut;
  c.detail = fmt::format(
      "{} threads, each pass after {} MiB of other reads; plain loads GB/s (median): packed Q8_0 {:.1f}, "
      "Q4_0 {:.1f}, Q4_K {:.1f}, Q6_K {:.1f}, {}x{} {} F32 {:.1f}, {}x{} {} F16 {:.1f}, Q8_0 as stored "
      "{:.1f} | "
      "screen ({} rounds; median speed-up over plain loads, rounds won): {} | confirmed ({} rounds, A B B A; "
      "taken at x{:.2f} in {:.0f}% of rounds): {}",
      pool.size(), kCalEvictBytes >> 20, gbps(mats[0].packed_bytes, plain_passes[0]),
      gbps(mats[1].packed_bytes, plain_passes[1]), gbps(mats[2].packed_bytes, plain_passes[2]),
      gbps(mats[3].packed_bytes, plain_passes[3]), kCalIn, fmats[0].t.y_stride,
      fmats[0].packed ? "packed" : "stored", gbps(fmats[0].bytes, plain_passes[4]), kCalIn,
      fmats[1].t.y_stride, fmats[1].packed ? "packed" : "stored", gbps(fmats[1].bytes, plain_passes[5]),
      gbps(stored_bytes, plain_passes[kLayout]), kScreenRounds, screen_text, kConfirmRounds,
      protocol.rule.min_speedup, 100 * protocol.rule.min_win_fraction, confirm_text);
  c.source = "measured";
  return c;
}

namespace {

std::mutex g_mu;
std::optional<KernelChoice> g_choice;

KernelChoice load_or_calibrate() {
  if (calibration_disabled()) return fallback("LADDER_KERNEL_CALIBRATION=0: plain loads, repacked");
  const std::string path = kernel_choice_cache_path();
  if (!path.empty()) {
    if (auto cached = read_kernel_choice(path)) return *cached;
  }
  const double t0 = now_s();
  KernelChoice c = calibrate_kernel_choice();
  if (c.source == "measured") {
    spdlog::info(
        "ops: measured the decode kernels in {:.0f} ms: {} streaming (K-quants {}, F32 {}, F16/BF16 {}), "
        "Q8_0/Q4_0 {}",
        1e3 * (now_s() - t0), to_string(c.decode_stream), to_string(c.kquant_stream), to_string(c.f32_stream),
        to_string(c.f16_stream), c.repack_q32 ? "repacked" : "as stored");
    if (!path.empty() && !write_kernel_choice(path, c)) {
      spdlog::warn("ops: cannot write the kernel choice cache {}; it will be measured again", path);
    } else if (!path.empty()) {
      c.source = "measured, cached in " + path;
    }
  }
  return c;
}

}  // namespace

const StreamStrategy& stream_for(const KernelChoice& c, TensorType type) {
  switch (type) {
    case TensorType::kF32: return c.f32_stream;
    case TensorType::kF16:
    case TensorType::kBF16: return c.f16_stream;
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K: return c.kquant_stream;
    default: return c.decode_stream;
  }
}

const KernelChoice& kernel_choice() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_choice) g_choice = load_or_calibrate();
  return *g_choice;
}

void set_kernel_choice(const KernelChoice& choice) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_choice = choice;
  g_choice->source = "set";
}

std::string kernel_fingerprint() {
  std::string f = active_target_name();
  if (detail::has_packed(TensorType::kQ4_K)) f += ";kq=packed16";
  if (amx_bf16_active()) f += ";f16=amx-bf16x3";
  if (bf16_dot_active()) f += ";bf16=dpbf16x2";
  return f;
}

std::string describe_kernel_paths() {
  const KernelChoice& c = kernel_choice();
  const bool packs = detail::has_packed(TensorType::kQ8_0);
  std::string out = fmt::format("kernel fingerprint: {}\n", kernel_fingerprint());
  out +=
      fmt::format("decode streaming: {} for Q8_0/Q4_0, {} for K-quants, {} for F32, {} for F16/BF16 ({})\n",
                  to_string(c.decode_stream), to_string(c.kquant_stream), to_string(c.f32_stream),
                  to_string(c.f16_stream), c.source);
  if (!c.detail.empty()) {
    // The detail is one line in the cache file; its parts go on lines of their own here.
    std::string detail = c.detail;
    for (size_t at = 0; (at = detail.find(" | ", at)) != std::string::npos;) detail.replace(at, 3, "\n    ");
    out += fmt::format("  calibration: {}\n", detail);
  }
  out += fmt::format("Q8_0/Q4_0 weights: {}\n",
                     !packs ? "as stored (no packed kernels on this target)"
                            : (c.repack_q32 || amx_int8_active() ? "repacked at load (16 columns interleaved)"
                                                                 : "as stored (measured faster here)"));
  out += fmt::format("K-quant weights: {}\n", packs ? "repacked at load" : "as stored");
  const std::string float_layout = detail::has_float_packed()
                                       ? fmt::format("repacked at load ({} columns interleaved per vector)",
                                                     detail::float_pack_group_cols())
                                       : std::string("as stored");
  out += fmt::format("F32 weights: FMA, {}\n", float_layout);
  if (amx_bf16_active()) {
    out += "F16/BF16 weights: AMX-BF16 tiles at every batch size (bf16x3 arithmetic)\n";
  } else {
    const std::string fma = "FMA on F32, " + float_layout;
    const std::string amx_hint = amx_support().bf16() ? " (AMX-BF16 tiles: LADDER_AMX_BF16=1)" : "";
    out += fmt::format("F16 weights: {}{}\n", fma, amx_hint);
    out += fmt::format("BF16 weights: {}\n",
                       bf16_dot_active() ? "AVX512-BF16 dot products (vdpbf16ps) at every batch size, bf16x2 "
                                           "arithmetic (FMA instead: LADDER_BF16_DOT=0)"
                                         : fma + amx_hint);
  }
  const AmxSupport& amx = amx_support();
  if (amx_int8_active()) {
    out +=
        "AMX: int8 tiles for batched and prefill matmuls on repacked weights (bit-identical to the "
        "vectors)\n";
  } else if (amx.int8()) {
    out += "AMX: available, not used (switched off, or the AVX3_DL kernels are not dispatched)\n";
  } else {
    out += "AMX: not used: " + (amx.why_not.empty() ? std::string("no AMX-INT8") : amx.why_not) + "\n";
  }
  return out;
}

}  // namespace ladder::ops
