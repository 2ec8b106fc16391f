// Whether 2 MiB pages make decode faster: the same data on 4 KiB pages and
// on transparent huge pages (common/page_memory.h), read two ways:
//   Read       a 512 MiB buffer summed by every thread (the bandwidth probe's
//              access pattern, ops/roofline.h)
//   Decode1b   one decode step's matmuls (batch 1) over 4 layers of the 1b
//              preset's shapes in packed Q8_0 (dim 2048, 8 KV heads of 64,
//              FFN 8192: 249 MiB, far beyond the caches), grouped as the
//              model groups them (QKV, O, gate+up, down)
// Bytes per second of each on each kind of page, 2 threads. Run with
// --benchmark_repetitions=6 --benchmark_enable_random_interleaving=true so
// the two kinds alternate (a shared VM's speed drifts within minutes) and
// compare the medians. Reproduce: docs/BENCHMARKS.md, "Huge pages".
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/page_memory.h"
#include "common/tensor_type.h"
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

void Read(benchmark::State& state) {
  const bool huge = state.range(0) != 0;
  const auto* words = reinterpret_cast<const uint64_t*>(read_buffer(huge).data());
  const int64_t n = static_cast<int64_t>(kReadBytes / sizeof(uint64_t));
  uint64_t sink = 0;
  for (auto _ : state) {
    pool().parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
      uint64_t acc[8] = {};
      for (int64_t i = b; i < e; i += 8) {
        for (int k = 0; k < 8; ++k) acc[k] ^= words[i + k];
      }
      uint64_t x = 0;
      for (uint64_t a : acc) x ^= a;
      benchmark::DoNotOptimize(x);
    });
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kReadBytes));
  state.SetLabel(huge ? "2 MiB pages" : "4 KiB pages");
}

// One layer's matrices of the 1b preset, {n_in, n_out}.
struct Shape {
  int64_t n_in, n_out;
};
constexpr Shape kLayer[] = {{2048, 2048}, {2048, 512}, {2048, 512}, {2048, 2048},
                            {2048, 8192}, {2048, 8192}, {8192, 2048}};
constexpr int kLayers = 4;

struct DecodeWeights {
  std::vector<ops::WeightMatrix> w;
  std::vector<ops::PackedWeights> packed;
  size_t bytes = 0;
};

// Random Q8_0 rows (a small f16 scale, random int8 values), packed.
DecodeWeights make_weights(bool huge) {
  DecodeWeights d;
  std::mt19937 rng(11);
  for (int l = 0; l < kLayers; ++l) {
    for (const Shape& s : kLayer) {
      const int64_t blocks = s.n_in / 32 * s.n_out;
      std::vector<uint8_t> stored(static_cast<size_t>(blocks * 34));
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* blk = stored.data() + b * 34;
        blk[0] = 0x00;
        blk[1] = 0x20;  // f16 scale 2^-7
        for (int i = 2; i < 34; ++i) blk[i] = static_cast<uint8_t>(rng());
      }
      const ops::WeightMatrix w{TensorType::kQ8_0, stored.data(), s.n_in, s.n_out};
      ops::PackedWeights p = ops::pack_weights_always(w, pool());
      if (p.empty()) return {};
      // Move the packed bytes onto the kind of pages under test.
      PageMemory m = page_memory(p.bytes, huge);
      std::memcpy(m.data(), p.data.data(), p.bytes);
      p.data = std::move(m);
      d.bytes += p.bytes;
      d.w.push_back({TensorType::kQ8_0, nullptr, s.n_in, s.n_out});
      d.packed.push_back(std::move(p));
    }
  }
  return d;
}

void Decode1b(benchmark::State& state) {
  const bool huge = state.range(0) != 0;
  static DecodeWeights small_w, huge_w;
  DecodeWeights& d = huge ? huge_w : small_w;
  if (d.w.empty()) d = make_weights(huge);
  if (d.w.empty()) {
    state.SkipWithError("no packed Q8_0 layout on this target");
    return;
  }
  std::vector<float> x(8192, 0.25f);
  std::vector<float> y(4 * 8192);
  const auto product = [&](size_t i, float* out) { return ops::MatmulOutput{&d.w[i], &d.packed[i], out}; };
  for (auto _ : state) {
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
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(d.bytes));
  state.SetLabel(huge ? "2 MiB pages" : "4 KiB pages");
}

BENCHMARK(Read)->Arg(0)->Arg(1)->UseRealTime()->MinTime(1.0);
BENCHMARK(Decode1b)->Arg(0)->Arg(1)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
