// Whether 2 MiB pages make decode faster: the same data on 4 KiB pages and
// on transparent huge pages (common/page_memory.h), read two ways:
//   Read       a 512 MiB buffer summed by every thread (the bandwidth probe's
//              access pattern, ops/roofline.h)
//   Decode1b   one decode step's matmuls (batch 1) over the 16 layers of the 1b
//              preset's shapes, packed (dim 2048, 8 KV heads of 64, FFN
//              8192: Q8_0 996 MiB, Q4_K 527 MiB, far beyond the caches),
//              grouped as the model groups them (QKV, O, gate+up, down)
// GB/s of each on each kind of page, 2 threads, paired: every iteration
// runs small, huge, huge, small (a shared VM's speed drifts within
// seconds), and the median of the per-iteration ratios is the figure.
// Reproduce: build/bench/huge_pages_bench (docs/BENCHMARKS.md, "Huge pages").
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/page_memory.h"
#include "common/tensor_type.h"
#include "gguf/quantize.h"
#include "ops/packed_weights.h"

namespace {

using ladder::PageMemory;
using ladder::TensorType;
namespace ops = ladder::ops;

// Memory of either kind. Small pages are advised against THP too, so the
// comparison holds on a kernel whose THP policy is "always".
PageMemory page_memory(size_t bytes, bool huge) {
  PageMemory m = PageMemory::map(bytes, huge ? PageMemory::Pages::kHuge : PageMemory::Pages::kSmall);
#ifdef MADV_NOHUGEPAGE
  if (!huge) ::madvise(m.data(), m.size(), MADV_NOHUGEPAGE);
#endif
  return m;
}

ops::ThreadPool& pool() {
  static ops::ThreadPool p(2);
  return p;
}

constexpr size_t kReadBytes = size_t{512} << 20;

const PageMemory& read_buffer(bool huge) {
  static PageMemory small, big;
  PageMemory& m = huge ? big : small;
  if (m.empty()) {
    m = page_memory(kReadBytes, huge);
    std::memset(m.data(), 1, kReadBytes);
  }
  return m;
}

// One streaming read of the whole buffer.
void read_pass(const PageMemory& m) {
  const auto* words = reinterpret_cast<const uint64_t*>(m.data());
  const int64_t n = static_cast<int64_t>(kReadBytes / sizeof(uint64_t));
  pool().parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    uint64_t acc[8] = {};
    for (int64_t i = b; i < e; i += 8) {
      for (int k = 0; k < 8; ++k) acc[k] ^= words[i + k];
    }
    uint64_t x = 0;
    for (uint64_t a : acc) x ^= a;
    benchmark::DoNotOptimize(x);
  });
}

// One layer's matrices of the 1b preset, {n_in, n_out}.
struct Shape {
  int64_t n_in, n_out;
};
constexpr Shape kLayer[] = {{2048, 2048}, {2048, 512}, {2048, 512}, {2048, 2048},
                            {2048, 8192}, {2048, 8192}, {8192, 2048}};
constexpr int kLayers = 16;

struct DecodeWeights {
  std::vector<ops::WeightMatrix> w;
  std::vector<ops::PackedWeights> packed;
  size_t bytes = 0;
};

// Random weights in `type`, one stored copy per shape (contents may repeat
// across layers: distinct addresses keep them out of cache), packed.
DecodeWeights make_weights(bool huge, TensorType type) {
  DecodeWeights d;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<std::vector<uint8_t>> stored_of(std::size(kLayer));
  for (size_t i = 0; i < std::size(kLayer); ++i) {
    const Shape& s = kLayer[i];
    const size_t rb = ladder::row_bytes(ladder::traits_of(type), static_cast<size_t>(s.n_in));
    stored_of[i].resize(rb * static_cast<size_t>(s.n_out));
    std::vector<float> row(static_cast<size_t>(s.n_in));
    for (int64_t o = 0; o < s.n_out; ++o) {
      for (float& v : row) v = dist(rng);
      uint8_t* dst = stored_of[i].data() + o * rb;
      if (!ladder::gguf::quantize_row_fitted(type, row.data(), dst, row.size()).is_ok()) return {};
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    for (size_t i = 0; i < std::size(kLayer); ++i) {
      const Shape& s = kLayer[i];
      const ops::WeightMatrix w{type, stored_of[i].data(), s.n_in, s.n_out};
      ops::PackedWeights p = ops::pack_weights_always(w, pool());
      if (p.empty()) return {};
      // Move the packed bytes onto the kind of pages under test.
      PageMemory m = page_memory(p.bytes, huge);
      std::memcpy(m.data(), p.data.data(), p.bytes);
      p.data = std::move(m);
      d.bytes += p.bytes;
      d.w.push_back({type, nullptr, s.n_in, s.n_out});
      d.packed.push_back(std::move(p));
    }
  }
  return d;
}

// One decode step's matmuls over every layer.
void decode_pass(const DecodeWeights& d) {
  static std::vector<float> x(8192, 0.25f), y(4 * 8192);
  const auto product = [&](size_t i, float* out) { return ops::MatmulOutput{&d.w[i], &d.packed[i], out}; };
  for (size_t l = 0; l < d.w.size(); l += 7) {
    const ops::MatmulOutput qkv[] = {product(l, y.data()), product(l + 1, y.data() + 2048),
                                     product(l + 2, y.data() + 2560)};
    ops::matmul_group(qkv, x.data(), 1, pool());
    const ops::MatmulOutput o = product(l + 3, y.data());
    ops::matmul_group({&o, 1}, x.data(), 1, pool());
    const ops::MatmulOutput gate_up[] = {product(l + 4, y.data()), product(l + 5, y.data() + 8192)};
    ops::matmul_group(gate_up, x.data(), 1, pool());
    const ops::MatmulOutput down = product(l + 6, y.data());
    ops::matmul_group({&down, 1}, x.data(), 1, pool());
  }
  benchmark::DoNotOptimize(y.data());
}

double seconds(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Each iteration times one pass on small pages, two on huge pages and one
// more on small (A B B A), so drift within the iteration cancels; reports
// the GB/s of each kind over all iterations and the median and 10th/90th
// percentiles of the per-iteration ratio huge / small.
void paired(benchmark::State& state, size_t bytes, const std::function<void(bool huge)>& pass) {
  pass(false);  // warm-up: first touches, scratch
  pass(true);
  std::vector<double> ratios;
  double small_s = 0, huge_s = 0;
  for (auto _ : state) {
    const double a1 = seconds([&] { pass(false); });
    const double b1 = seconds([&] { pass(true); });
    const double b2 = seconds([&] { pass(true); });
    const double a2 = seconds([&] { pass(false); });
    small_s += a1 + a2;
    huge_s += b1 + b2;
    ratios.push_back((a1 + a2) / (b1 + b2));
  }
  std::sort(ratios.begin(), ratios.end());
  const auto at = [&](double q) {
    return ratios[static_cast<size_t>(q * static_cast<double>(ratios.size() - 1))];
  };
  const double n = 2.0 * static_cast<double>(ratios.size());
  state.counters["small_GBps"] = static_cast<double>(bytes) * n / small_s / 1e9;
  state.counters["huge_GBps"] = static_cast<double>(bytes) * n / huge_s / 1e9;
  state.counters["huge/small"] = at(0.5);
  state.counters["p10"] = at(0.1);
  state.counters["p90"] = at(0.9);
}

void Read(benchmark::State& state) {
  paired(state, kReadBytes, [](bool huge) { read_pass(read_buffer(huge)); });
}

// range(0): 0 = Q8_0, 1 = Q4_K.
void Decode1b(benchmark::State& state) {
  const TensorType type = state.range(0) == 0 ? TensorType::kQ8_0 : TensorType::kQ4_K;
  const DecodeWeights small_w = make_weights(false, type);
  const DecodeWeights huge_w = make_weights(true, type);
  if (small_w.w.empty() || huge_w.w.empty()) {
    state.SkipWithError("no packed layout for this type on this target");
    return;
  }
  paired(state, small_w.bytes, [&](bool huge) { decode_pass(huge ? huge_w : small_w); });
  state.SetLabel(type == TensorType::kQ8_0 ? "Q8_0" : "Q4_K");
}

BENCHMARK(Read)->Iterations(30)->UseRealTime();
BENCHMARK(Decode1b)->Arg(0)->Arg(1)->Iterations(30)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
