#include "perf/roofline_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "common/check.h"
#include "common/half.h"
#include "hwy/aligned_allocator.h"
#include "ops/amx.h"
#include "ops/bf16_dot.h"
#include "ops/kernel_choice.h"
#include "ops/matmul.h"
#include "ops/packed_weights.h"
#include "ops/simd_targets.h"

namespace ladder::perf {

using ops::PackedWeights;
using ops::ThreadPool;

namespace {

// Random but valid weights: random bytes, then every block scale set to a
// small finite F16 (a random F16 could be inf/NaN).
void fill_random_weights(TensorType type, uint8_t* data, size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  if (type == TensorType::kF32) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto* f = reinterpret_cast<float*>(data);
    for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = dist(rng);
    return;
  }
  for (size_t i = 0; i + 4 <= bytes; i += 4) {
    const uint32_t r = rng();
    std::memcpy(data + i, &r, 4);
  }
  const uint16_t scale = f32_to_f16(0.01f);
  const auto& tr = traits_of(type);
  if (type == TensorType::kF16 || type == TensorType::kBF16) {
    auto* h = reinterpret_cast<uint16_t*>(data);
    const uint16_t one = type == TensorType::kF16 ? f32_to_f16(0.5f) : f32_to_bf16(0.5f);
    for (size_t i = 0; i < bytes / 2; ++i) h[i] = static_cast<uint16_t>(one ^ (h[i] & 0x83FFu));  // |v| < 1
    return;
  }
  for (size_t b = 0; b + tr.block_bytes <= bytes; b += tr.block_bytes) {
    uint8_t* blk = data + b;
    switch (type) {
      case TensorType::kQ6_K: std::memcpy(blk + offsetof(BlockQ6_K, d), &scale, 2); break;
      case TensorType::kQ4_K:
      case TensorType::kQ5_K:
      case TensorType::kQ4_1:
      case TensorType::kQ5_1:
        std::memcpy(blk, &scale, 2);
        std::memcpy(blk + 2, &scale, 2);
        break;
      case TensorType::kQ8_K: {
        const float d = 0.01f;
        std::memcpy(blk, &d, 4);
        break;
      }
      default:  // Q4_0, Q5_0, Q8_0: scale first
        std::memcpy(blk, &scale, 2);
        break;
    }
  }
}

// "Q8_0" or "Q8_0p" (packed weights).
std::string kind_name(TensorType type, bool packed) {
  return std::string(tensor_type_name(type)) + (packed ? "p" : "");
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double time_matmul(ThreadPool& pool, TensorType type, int64_t n_in, int64_t n_out, int64_t rows,
                   double seconds, size_t cycle_bytes, bool packed) {
  const size_t wbytes = row_bytes(traits_of(type), static_cast<size_t>(n_in)) * static_cast<size_t>(n_out);
  const size_t copies = std::max<size_t>(1, (cycle_bytes + wbytes - 1) / wbytes);
  std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>> weights;
  for (size_t c = 0; c < copies; ++c) {
    weights.push_back(hwy::AllocateAligned<uint8_t>(wbytes));
    // Copies live at distinct addresses, which is all that keeps them out of
    // cache; their contents may repeat (filling 256 MiB randomly is slow).
    if (c == 0) {
      fill_random_weights(type, weights.back().get(), wbytes, 1);
    } else {
      std::memcpy(weights.back().get(), weights[0].get(), wbytes);
    }
  }
  std::vector<PackedWeights> packs(copies);
  if (packed) {
    for (size_t c = 0; c < copies; ++c) {
      packs[c] = ops::pack_weights_always({type, weights[c].get(), n_in, n_out}, pool);
      LADDER_CHECK(!packs[c].empty(), "time_matmul: no packed layout for this type on this target");
      weights[c].reset();  // only the packed copy stays resident, as in a served model
    }
  }
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& v : x) v = dist(rng);
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  auto call = [&](size_t c) {
    if (packed) {
      ops::matmul({type, nullptr, n_in, n_out}, packs[c], x.data(), rows, y.data(), pool);
    } else {
      ops::matmul({type, weights[c].get(), n_in, n_out}, x.data(), rows, y.data(), pool);
    }
  };
  for (size_t c = 0; c < copies; ++c) call(c);  // warm-up: page faults, scratch
  // Best of three timed rounds, each at least `seconds / 3` and one full cycle.
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const double t0 = now_s();
    int64_t calls = 0;
    do {
      for (size_t c = 0; c < copies; ++c, ++calls) call(c);
    } while (now_s() - t0 < seconds / 3);
    best = std::min(best, (now_s() - t0) / static_cast<double>(calls));
  }
  return best;
}

ModelPassResult time_model_pass(ThreadPool& pool, TensorType type, int64_t batch, double seconds,
                                bool packed) {
  constexpr int64_t kDim = 768, kFfn = 2048, kLayers = 12, kVocab = 32000;
  struct Shape {
    int64_t n_in, n_out;
  };
  std::vector<Shape> shapes;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int i = 0; i < 4; ++i) shapes.push_back({kDim, kDim});  // q, k, v, o
    shapes.push_back({kDim, kFfn});                              // gate
    shapes.push_back({kDim, kFfn});                              // up
    shapes.push_back({kFfn, kDim});                              // down
  }
  shapes.push_back({kDim, kVocab});  // output head
  std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>> weights;
  double total_bytes = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const size_t bytes = row_bytes(traits_of(type), static_cast<size_t>(shapes[i].n_in)) * shapes[i].n_out;
    weights.push_back(hwy::AllocateAligned<uint8_t>(bytes));
    fill_random_weights(type, weights.back().get(), bytes, static_cast<uint32_t>(i + 1));
    total_bytes += static_cast<double>(bytes);
  }
  std::vector<PackedWeights> packs(shapes.size());
  if (packed) {
    total_bytes = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      packs[i] = ops::pack_weights_always({type, weights[i].get(), shapes[i].n_in, shapes[i].n_out}, pool);
      LADDER_CHECK(!packs[i].empty(), "time_model_pass: no packed layout for this type on this target");
      total_bytes += static_cast<double>(packs[i].bytes);
      weights[i].reset();
    }
  }
  std::vector<float> x(static_cast<size_t>(batch * kFfn), 0.25f);
  std::vector<float> y(static_cast<size_t>(batch * kVocab));
  auto pass = [&] {
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (packed) {
        ops::matmul({type, nullptr, shapes[i].n_in, shapes[i].n_out}, packs[i], x.data(), batch, y.data(),
                    pool);
      } else {
        ops::matmul({type, weights[i].get(), shapes[i].n_in, shapes[i].n_out}, x.data(), batch, y.data(),
                    pool);
      }
    }
  };
  pass();  // warm-up
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const double t0 = now_s();
    int64_t n = 0;
    do {
      pass();
      ++n;
    } while (now_s() - t0 < seconds / 3);
    best = std::min(best, (now_s() - t0) / static_cast<double>(n));
  }
  ModelPassResult r;
  r.type = type;
  r.batch = batch;
  r.packed = packed;
  r.ms_per_pass = best * 1e3;
  r.tokens_per_s = static_cast<double>(batch) / best;
  r.gbps = total_bytes / best / 1e9;
  return r;
}

RooflineReport run_roofline(ThreadPool& pool, const RooflineOptions& opts) {
  RooflineReport r;
  r.target = ops::active_target_name();
  r.threads = pool.size();
  r.bandwidth = ops::measure_memory_bandwidth(pool, opts.probe_bytes);
  r.peaks = ops::measure_compute_peaks(pool);
  r.kernel_paths = ops::describe_kernel_paths();
  const double read = r.bandwidth.read_gbps;
  const int64_t shapes[][2] = {{768, 2048}, {2048, 768}, {768, 32000}};  // {n_in, n_out}
  // Every shape's n_in is a multiple of 256, as the K-quants need. Stored
  // Q5_K has no integer kernel: its row shows the dequantizing path.
  const std::pair<TensorType, bool> kinds[] = {
      {TensorType::kF32, false},  {TensorType::kF32, true},   {TensorType::kF16, false},
      {TensorType::kF16, true},   {TensorType::kBF16, false}, {TensorType::kBF16, true},
      {TensorType::kQ8_0, false}, {TensorType::kQ8_0, true},
      {TensorType::kQ4_0, false}, {TensorType::kQ4_0, true},  {TensorType::kQ4_K, false},
      {TensorType::kQ4_K, true},  {TensorType::kQ5_K, false}, {TensorType::kQ5_K, true},
      {TensorType::kQ6_K, false}, {TensorType::kQ6_K, true}};
  for (const auto& [type, packed] : kinds) {
    if (packed && !ops::has_packed_layout(type)) continue;
    for (const auto& s : shapes) {
      GemvResult g;
      g.type = type;
      g.packed = packed;
      g.n_in = s[0];
      g.n_out = s[1];
      const double secs =
          time_matmul(pool, type, s[0], s[1], 1, opts.seconds_per_case, opts.cycle_bytes, packed);
      const double bytes =
          packed ? static_cast<double>(ops::packed_weight_bytes(type, s[0], s[1]))
                 : static_cast<double>(row_bytes(traits_of(type), static_cast<size_t>(s[0])) * s[1]);
      g.us_per_call = secs * 1e6;
      g.gbps = bytes / secs / 1e9;
      g.pct_of_peak = 100.0 * g.gbps / read;
      r.gemv.push_back(g);
    }
  }
  // 512 rows: F32 against the FMA peak; packed Q8_0 and Q4_K against the
  // best int8 peak, on vectors and (where present) on AMX tiles. Weights
  // small enough to stay in cache: a GEMM reuses them 512 times.
  // Packed BF16 on the FMA kernel and, where the CPU has it, on the dot
  // kernel, against the same FMA peak.
  struct GemmCase {
    TensorType type;
    bool packed, amx, bf16_dot;
  };
  std::vector<GemmCase> cases = {{TensorType::kF32, false, false, false}};
  const bool dot = ops::bf16_dot_active();
  if (ops::has_packed_layout(TensorType::kBF16)) {
    cases.push_back({TensorType::kBF16, true, false, false});
    if (dot) cases.push_back({TensorType::kBF16, true, false, true});
  }
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_K}) {
    if (!ops::has_packed_layout(t)) continue;
    cases.push_back({t, true, false, false});
    if (ops::amx_support().int8()) cases.push_back({t, true, true, false});
  }
  for (const GemmCase& c : cases) {
    ops::set_amx_enabled(c.amx);
    if (c.type == TensorType::kBF16) ops::set_bf16_dot_wanted(c.bf16_dot);
    for (const auto& s : {std::pair<int64_t, int64_t>{768, 768}, {768, 2048}}) {
      GemmResult g;
      g.type = c.type;
      g.packed = c.packed;
      g.amx = c.amx && ops::amx_int8_active();
      g.bf16_dot = c.bf16_dot;
      g.rows = 512;
      g.n_in = s.first;
      g.n_out = s.second;
      const double secs =
          time_matmul(pool, c.type, s.first, s.second, g.rows, opts.seconds_per_case, 0, c.packed);
      const double macs = static_cast<double>(g.rows * g.n_in * g.n_out);
      g.ms_per_call = secs * 1e3;
      if (c.type == TensorType::kF32 || c.type == TensorType::kBF16) {
        g.gops = 2.0 * macs / secs / 1e9;
        g.pct_of_peak = 100.0 * g.gops / r.peaks.fma_gflops;
      } else {
        g.gops = macs / secs / 1e9;
        g.pct_of_peak = 100.0 * g.gops / r.peaks.best_int8_gmacs();
      }
      r.gemm.push_back(g);
    }
    ops::set_bf16_dot_wanted(std::nullopt);  // as LADDER_BF16_DOT says
  }
  ops::set_amx_enabled(true);  // the default (LADDER_AMX=0 still holds)
  for (const auto& [type, packed] : kinds) {
    if (packed && !ops::has_packed_layout(type)) continue;
    for (int64_t batch : {1, 16}) {
      ModelPassResult m = time_model_pass(pool, type, batch, 2 * opts.seconds_per_case, packed);
      m.pct_of_bw = 100.0 * m.gbps / read;
      r.model.push_back(m);
    }
  }
  return r;
}

double probe_over_stream(const ops::BandwidthResult& b) {
  return b.stream_read_gbps > 0 ? b.read_gbps / b.stream_read_gbps : 0.0;
}

bool probe_agrees_with_stream(const ops::BandwidthResult& b) {
  const double ratio = probe_over_stream(b);
  return ratio >= 0.9 && ratio <= 1.1;
}

std::string format_roofline(const RooflineReport& r) {
  const ops::BandwidthResult& bw = r.bandwidth;
  std::string out = fmt::format("roofline: {} threads, target {}\n", r.threads, r.target);
  out += fmt::format("memory read, every strategy at each thread count (GB/s, {} MiB buffer):\n",
                     bw.bytes >> 20);
  out += fmt::format("  {:<10}", "strategy");
  for (int t = 1; t <= r.threads; ++t) out += fmt::format(" {:>9}", fmt::format("{} thr", t));
  out += "\n";
  for (const ops::StreamStrategy& s : ops::candidate_stream_strategies()) {
    bool any = false;
    std::string line = fmt::format("  {:<10}", ops::to_string(s));
    for (int t = 1; t <= r.threads; ++t) {
      for (const ops::ReadProbe& p : bw.reads) {
        if (p.strategy == s && p.threads == t) line += fmt::format(" {:9.1f}", p.gbps), any = true;
      }
    }
    if (any) out += line + "\n";
  }
  out += fmt::format("  best: {} at {} threads, {:.1f} GB/s: the read roofline every % below divides by\n",
                     ops::to_string(bw.best.strategy), bw.best.threads, bw.read_gbps);
  out += fmt::format(
      "  STREAM-style check (plain C++ loops, own threads): {:.1f} GB/s; best / check = {:.2f} ({})\n",
      bw.stream_read_gbps, probe_over_stream(bw),
      probe_agrees_with_stream(bw) ? "within 10%" : "NOT within 10%: a noisy moment, or a probe bug");
  out += fmt::format("  triad {:.1f} GB/s\n", bw.triad_gbps);
  out += "arithmetic peaks, all threads:\n";
  out += fmt::format("  FMA (F32)      {:8.1f} GFLOP/s\n", r.peaks.fma_gflops);
  out += fmt::format("  int8 {:<9} {:8.1f} GMAC/s\n", r.peaks.int8_method, r.peaks.int8_gmacs);
  if (r.peaks.amx_int8_gmacs > 0)
    out += fmt::format("  AMX int8       {:8.1f} GMAC/s\n", r.peaks.amx_int8_gmacs);
  if (r.peaks.amx_bf16_gflops > 0)
    out += fmt::format("  AMX bf16       {:8.1f} GFLOP/s\n", r.peaks.amx_bf16_gflops);
  out += "kernel paths:\n";
  std::string paths = r.kernel_paths;
  for (size_t at = 0; at < paths.size();) {
    const size_t nl = paths.find('\n', at);
    out += "  " + paths.substr(at, nl - at) + "\n";
    at = nl == std::string::npos ? paths.size() : nl + 1;
  }
  out += "matmul, batch 1 (weights cycled from memory):\n";
  for (const auto& g : r.gemv) {
    out += fmt::format("  {:<5} {:>5}x{:<5} {:8.1f} us  {:6.1f} GB/s  {:5.1f}% of read roofline\n",
                       kind_name(g.type, g.packed), g.n_in, g.n_out, g.us_per_call, g.gbps, g.pct_of_peak);
  }
  out += "GEMM, 512 rows (weights in cache):\n";
  for (const auto& g : r.gemm) {
    const bool fl = g.type == TensorType::kF32 || g.type == TensorType::kBF16;
    const char* method = g.bf16_dot ? "vdpbf16" : (fl ? "FMA" : (g.amx ? "AMX" : "vectors"));
    out += fmt::format("  {:<5} {:<7} {}x{} {:8.2f} ms  {:7.1f} {}  {:5.1f}% of {}\n",
                       kind_name(g.type, g.packed), method, g.n_in, g.n_out, g.ms_per_call, g.gops,
                       fl ? "GFLOP/s" : "GMAC/s ", g.pct_of_peak, fl ? "F32 FMA peak" : "best int8 peak");
  }
  out += "model-shaped decode step, matmuls only (dim 768, 12 layers, FFN 2048, vocab 32000):\n";
  for (const auto& m : r.model) {
    double speedup = 0;
    for (const auto& b1 : r.model) {
      if (b1.type == m.type && b1.packed == m.packed && b1.batch == 1) {
        speedup = m.tokens_per_s / b1.tokens_per_s;
      }
    }
    out += fmt::format(
        "  {:<5} batch {:>2} {:8.2f} ms  {:8.1f} tok/s  {:6.1f} GB/s  {:5.1f}% of read roofline  {:4.1f}x "
        "batch 1\n",
        kind_name(m.type, m.packed), m.batch, m.ms_per_pass, m.tokens_per_s, m.gbps, m.pct_of_bw, speedup);
  }
  return out;
}

}  // namespace ladder::perf
