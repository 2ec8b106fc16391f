// The `ladder bench roofline` measurement: this machine's peak bandwidth and
// FMA throughput, then matmul at batch 1 (GB/s of weights streamed, as % of
// the measured bandwidth) and F32 GEMM (GFLOP/s as % of the measured peak),
// all in one run so the ratios compare like with like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "ops/roofline.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

struct GemvResult {
  TensorType type;
  bool packed = false;  // ops/packed_weights.h layout
  int64_t n_in = 0, n_out = 0;
  double us_per_call = 0;
  double gbps = 0;         // weight bytes / time
  double pct_of_peak = 0;  // gbps / measured read bandwidth
};

struct GemmResult {
  int64_t rows = 0, n_in = 0, n_out = 0;
  double ms_per_call = 0;
  double gflops = 0;
  double pct_of_peak = 0;  // gflops / measured FMA peak
};

// Every matmul of one decode step of a Llama-shaped model (dim 768, 12
// layers, FFN 2048, vocab 32000: q, k, v, o, gate, up, down per layer, then
// the output head), all weights distinct so they stream from memory.
struct ModelPassResult {
  TensorType type;
  bool packed = false;
  int64_t batch = 0;
  double ms_per_pass = 0;
  double tokens_per_s = 0;  // batch / pass time
  double gbps = 0;          // weight bytes / pass time
  double pct_of_bw = 0;     // gbps / measured read bandwidth
};

struct RooflineReport {
  std::string target;
  int threads = 0;
  BandwidthResult bandwidth;
  double peak_gflops = 0;
  std::vector<GemvResult> gemv;
  std::vector<GemmResult> gemm;
  std::vector<ModelPassResult> model;
};

struct RooflineOptions {
  // Seconds spent timing each matmul shape.
  double seconds_per_case = 0.5;
  // Weights are cycled over copies totalling at least this many bytes, so
  // they stream from memory as in a real forward pass (not from cache).
  size_t cycle_bytes = size_t{256} << 20;
};

// Times the model-shaped matmul pass at `batch` rows (see ModelPassResult).
ModelPassResult time_model_pass(ThreadPool& pool, TensorType type, int64_t batch, double seconds,
                                bool packed = false);

RooflineReport run_roofline(ThreadPool& pool, const RooflineOptions& opts = {});

// Human-readable report (ratios first), as `ladder bench roofline` prints it.
std::string format_roofline(const RooflineReport& r);

// Times matmul at `rows` rows on weights of `type` (random valid blocks),
// cycling copies totalling >= cycle_bytes; returns seconds per call.
// packed: use pack_weights() (when the target has a packed kernel).
double time_matmul(ThreadPool& pool, TensorType type, int64_t n_in, int64_t n_out, int64_t rows,
                   double seconds, size_t cycle_bytes, bool packed = false);

}  // namespace ladder::ops
