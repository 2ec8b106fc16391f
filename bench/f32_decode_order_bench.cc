// In which order one thread should read F32 weights at decode (batch 1).
// One decode step's matmuls of the 110m preset (dim 768, FFN 2048, 12
// layers, vocab 32000: 440 MB of F32 weights, far beyond the caches), the
// same weights held twice on huge pages: packed as Ladder loads them and
// row-major. Four ways through them, GB/s of weights:
//   read      the row-major copy summed with four accumulators: loads alone
//   ladder    ops::matmul_group on the packed copy, grouped as the model
//             groups its products (QKV, O, gate+up, down, output), under
//             this machine's F32 streaming strategy (ops/kernel_choice.h)
//   rows1     each column's row walked on its own with one accumulator:
//             `ladder`'s arithmetic per column (one FMA chain over chunks
//             of 16, in order; only the closing lane sum is written apart
//             here), but one contiguous row at a time
//   rows4     each row with four accumulators over 64 weights, summed at
//             the row's end: the order llama.cpp's F32 dot product uses
//             (other bits)
// Paired: every iteration runs the cases in turn and then in reverse order
// (A B C D D C B A: a shared VM's speed drifts within seconds); each case
// reports its GB/s and the median and 10th/90th percentiles of its
// per-iteration ratio to `read`. Reproduce: build/bench/f32_decode_order_bench
// (docs/BENCHMARKS.md, "F32 apart from F16").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "avx512_bench.h"
#include "common/page_memory.h"
#include "common/tensor_type.h"
#include "ops/matmul.h"
#include "ops/packed_weights.h"
#include "ops/thread_pool.h"

#if defined(__x86_64__)
namespace {

using ladder::PageMemory;
using ladder::TensorType;
namespace ops = ladder::ops;

ops::ThreadPool& pool() {
  static ops::ThreadPool p(1);
  return p;
}

struct Shape {
  int64_t n_in, n_out;
};
// One layer's products, as the model groups them: {first, count} into kLayer.
constexpr Shape kLayer[] = {{768, 768}, {768, 768}, {768, 768}, {768, 768}, {768, 2048}, {768, 2048}, {2048, 768}};
constexpr int kGroups[][2] = {{0, 3}, {3, 1}, {4, 2}, {6, 1}};
constexpr int kLayers = 12;
constexpr Shape kOutput = {768, 32000};

struct Matrix {
  Shape s;
  PageMemory rows;  // row-major, n_out x n_in floats
  ops::WeightMatrix w;
  ops::PackedWeights packed;
};

struct Weights {
  std::vector<Matrix> m;  // layer by layer in kLayer order, then the output
  size_t bytes = 0;
};

Matrix make_matrix(Shape s, std::mt19937& rng) {
  Matrix m;
  m.s = s;
  const size_t n = static_cast<size_t>(s.n_in * s.n_out);
  m.rows = PageMemory::map(n * sizeof(float), PageMemory::Pages::kHuge);
  auto* f = reinterpret_cast<float*>(m.rows.data());
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (size_t i = 0; i < n; ++i) f[i] = dist(rng);
  m.w = {TensorType::kF32, f, s.n_in, s.n_out};
  m.packed = ops::pack_weights_always(m.w, pool());
  return m;
}

const Weights& weights() {
  static const Weights w = [] {
    Weights d;
    std::mt19937 rng(3);
    for (int l = 0; l < kLayers; ++l) {
      for (const Shape& s : kLayer) d.m.push_back(make_matrix(s, rng));
    }
    d.m.push_back(make_matrix(kOutput, rng));
    for (const Matrix& m : d.m) d.bytes += static_cast<size_t>(m.s.n_in * m.s.n_out) * sizeof(float);
    return d;
  }();
  return w;
}

std::vector<float>& x() {
  static std::vector<float> v(2048, 0.25f);
  return v;
}
std::vector<float>& y() {
  static std::vector<float> v(4 * 32000);
  return v;
}

LADDER_BENCH_AVX512 void read_matrix(const Matrix& m) {
  const auto* p = reinterpret_cast<const float*>(m.rows.data());
  const size_t n = static_cast<size_t>(m.s.n_in * m.s.n_out);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
  }
  y()[0] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// n_in is a multiple of 64 for every shape here.
LADDER_BENCH_AVX512 void rows1_matrix(const Matrix& m, float* out) {
  const auto* w = reinterpret_cast<const float*>(m.rows.data());
  const float* xv = x().data();
  for (int64_t o = 0; o < m.s.n_out; ++o) {
    const float* r = w + o * m.s.n_in;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < m.s.n_in; k += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(xv + k), _mm512_loadu_ps(r + k), acc);
    out[o] = _mm512_reduce_add_ps(acc);
  }
}

LADDER_BENCH_AVX512 void rows4_matrix(const Matrix& m, float* out) {
  const auto* w = reinterpret_cast<const float*>(m.rows.data());
  const float* xv = x().data();
  for (int64_t o = 0; o < m.s.n_out; ++o) {
    const float* r = w + o * m.s.n_in;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < m.s.n_in; k += 64) {
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xv + k), _mm512_loadu_ps(r + k), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xv + k + 16), _mm512_loadu_ps(r + k + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(xv + k + 32), _mm512_loadu_ps(r + k + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(xv + k + 48), _mm512_loadu_ps(r + k + 48), a3);
    }
    out[o] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}

void ladder_step(const Weights& d) {
  float* out = y().data();
  for (int l = 0; l < kLayers; ++l) {
    for (const auto& g : kGroups) {
      std::vector<ops::MatmulOutput> products;
      int64_t off = 0;
      for (int i = 0; i < g[1]; ++i) {
        const Matrix& m = d.m[static_cast<size_t>(l * 7 + g[0] + i)];
        products.push_back({&m.w, &m.packed, out + off});
        off += m.s.n_out;
      }
      ops::matmul_group(products, x().data(), 1, pool());
    }
  }
  const Matrix& o = d.m.back();
  ops::matmul(o.w, o.packed, x().data(), 1, out, pool());
}

double seconds(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

enum Case { kRead, kLadder, kRows1, kRows4, kCases };
constexpr const char* kNames[] = {"read", "ladder", "rows1", "rows4"};

void pass(Case c) {
  const Weights& d = weights();
  switch (c) {
    case kRead:
      for (const Matrix& m : d.m) read_matrix(m);
      return;
    case kLadder: ladder_step(d); return;
    case kRows1:
      for (const Matrix& m : d.m) rows1_matrix(m, y().data());
      return;
    case kRows4:
      for (const Matrix& m : d.m) rows4_matrix(m, y().data());
      return;
    case kCases: break;
  }
}

void Orders(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512bw")) {
    state.SkipWithError("needs AVX-512 (F, BW, VL)");
    return;
  }
  const Weights& d = weights();
  if (d.m.front().packed.empty()) {
    state.SkipWithError("no packed F32 layout on this target");
    return;
  }
  for (int c = 0; c < kCases; ++c) pass(static_cast<Case>(c));  // warm-up
  std::vector<double> total(kCases, 0.0);
  std::vector<std::vector<double>> ratio(kCases);
  for (auto _ : state) {
    double t[kCases] = {};
    for (int c = 0; c < kCases; ++c) t[c] += seconds([&] { pass(static_cast<Case>(c)); });
    for (int c = kCases - 1; c >= 0; --c) t[c] += seconds([&] { pass(static_cast<Case>(c)); });
    for (int c = 0; c < kCases; ++c) {
      total[c] += t[c];
      ratio[c].push_back(t[kRead] / t[c]);
    }
  }
  const double passes = 2.0 * static_cast<double>(ratio[0].size());
  for (int c = 0; c < kCases; ++c) {
    std::sort(ratio[c].begin(), ratio[c].end());
    const auto at = [&](double q) {
      return ratio[c][static_cast<size_t>(q * static_cast<double>(ratio[c].size() - 1))];
    };
    const std::string n = kNames[c];
    state.counters[n + "_GBps"] = static_cast<double>(d.bytes) * passes / total[c] / 1e9;
    if (c == kRead) continue;
    state.counters[n + "/read"] = at(0.5);
    state.counters[n + "_p10"] = at(0.1);
    state.counters[n + "_p90"] = at(0.9);
  }
}

BENCHMARK(Orders)->Iterations(25)->UseRealTime()->Unit(benchmark::kSecond);

}  // namespace

#endif  // __x86_64__

BENCHMARK_MAIN();
