// The `ladder bench roofline` measurement: this machine's honest roofline
// (ops/roofline.h: the best read bandwidth of every strategy and thread
// count, checked against an independent STREAM-style read; FMA, int8 and AMX
// peaks), then matmul at batch 1 (GB/s of weights streamed, as % of the best
// read), GEMMs at 512 rows (as % of the best arithmetic of their kind) and a
// Llama-shaped decode step, all in one run so the ratios compare like with
// like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_type.h"
#include "ops/roofline.h"
#include "ops/thread_pool.h"

namespace ladder::perf {

struct GemvResult {
  TensorType type;
  bool packed = false;  // ops/packed_weights.h layout
  int64_t n_in = 0, n_out = 0;
  double us_per_call = 0;
  double gbps = 0;         // weight bytes / time
  double pct_of_peak = 0;  // gbps / best read bandwidth
};

struct GemmResult {
  TensorType type = TensorType::kF32;
  bool packed = false;
  bool amx = false;       // AMX tiles allowed (they serve packed int8 weights)
  bool bf16_dot = false;  // BF16 on AVX512-BF16 dot products (ops/bf16_dot.h), else FMA
  int64_t rows = 0, n_in = 0, n_out = 0;
  double ms_per_call = 0;
  double gops = 0;  // float kinds: GFLOP/s (2 per multiply-add); int8 kinds: GMAC/s
  // Float kinds: of the F32 FMA peak (the BF16 dot does twice an FMA's
  // multiply-adds per instruction, so it may pass 100%); int8 kinds: of the
  // best int8 peak (VNNI or AMX).
  double pct_of_peak = 0;
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
  double pct_of_bw = 0;     // gbps / best read bandwidth
};

struct RooflineReport {
  std::string target;
  int threads = 0;
  ops::BandwidthResult bandwidth;
  ops::ComputePeaks peaks;
  std::string kernel_paths;  // ops::describe_kernel_paths()
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
  // Read buffer of the bandwidth probes (0: ops' default, 512 MiB).
  size_t probe_bytes = 0;
};

// Times the model-shaped matmul pass at `batch` rows (see ModelPassResult).
ModelPassResult time_model_pass(ops::ThreadPool& pool, TensorType type, int64_t batch, double seconds,
                                bool packed = false);

RooflineReport run_roofline(ops::ThreadPool& pool, const RooflineOptions& opts = {});

// Human-readable report, as `ladder bench roofline` prints it: every read
// strategy, the check, the peaks, then the kernels as % of the bests.
std::string format_roofline(const RooflineReport& r);

// The probe's best read over the STREAM-style check, and whether it lies
// within 10% of it (the acceptance bound of the probe).
double probe_over_stream(const ops::BandwidthResult& b);
bool probe_agrees_with_stream(const ops::BandwidthResult& b);

// Times matmul at `rows` rows on weights of `type` (random valid blocks),
// cycling copies totalling >= cycle_bytes; returns seconds per call.
// packed: use pack_weights() (when the target has a packed kernel).
double time_matmul(ops::ThreadPool& pool, TensorType type, int64_t n_in, int64_t n_out, int64_t rows,
                   double seconds, size_t cycle_bytes, bool packed = false);

}  // namespace ladder::perf
