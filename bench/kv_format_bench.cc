// The KV formats paired in one run (f32, f16, q8, q4): bytes per token, the
// most concurrent 2k-token sequences that fit 1 GiB of KV memory, and decode
// attention time at 2k and 4k context, for one layer shaped like
// Llama-3-8B's (32 query heads, 8 KV heads of 128 dims, 32 layers for the
// memory counts), 2 threads. Reproduce:
//   build/bench/kv_format_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/engine.h"
#include "kv/kv_format.h"
#include "ops/attention.h"
#include "ops/kv_codec.h"

namespace ladder {
namespace {

constexpr int kLayers = 32, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlock = 16;
constexpr TensorType kFormats[] = {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0};

// Staging slots as the engine sizes them for a 1 GiB budget with its
// default step budget and running cap.
kv::KvShape shape_of(TensorType dtype) {
  kv::KvShape shape{.n_layers = kLayers,
                    .n_kv_heads = kKvHeads,
                    .head_dim = kHeadDim,
                    .block_size = kBlock,
                    .dtype = dtype};
  engine::EngineConfig cfg;
  cfg.kv_dtype = dtype;
  cfg.kv_memory_bytes = size_t{1} << 30;
  shape.n_staging = engine::kv_staging_slots_for(cfg, *kv::kv_staging_bytes(shape));
  return shape;
}

// Counters only: KV bytes per token (all layers, K and V) and how many
// 2048-token sequences fit 1 GiB next to the format's staging slots.
void BM_KvCapacity(benchmark::State& state) {
  const kv::KvShape shape = shape_of(kFormats[state.range(0)]);
  for (auto _ : state) benchmark::DoNotOptimize(shape.dtype);
  const double per_token = static_cast<double>(*kv::kv_block_bytes(shape)) / kBlock;
  const int32_t blocks = *kv::kv_blocks_that_fit(shape, size_t{1} << 30);
  state.SetLabel(ops::kv_dtype_short_name(shape.dtype));
  state.counters["kv_bytes_per_token"] = per_token;
  state.counters["vs_f16"] = per_token / (2.0 * 2 * kLayers * kKvHeads * kHeadDim);
  state.counters["seqs_2k_in_1GiB"] = blocks / (2048 / kBlock);
  state.counters["staging_MiB"] =
      static_cast<double>(*kv::kv_staging_bytes(shape)) * shape.n_staging / (1 << 20);
}
BENCHMARK(BM_KvCapacity)->DenseRange(0, 3)->Iterations(1);

// One decode query per head at the end of a context of range(1) tokens.
void BM_DecodeAttention(benchmark::State& state) {
  const TensorType dtype = kFormats[state.range(0)];
  const int64_t ctx = state.range(1);
  const int n_blocks = static_cast<int>((ctx + kBlock - 1) / kBlock);
  ops::PagedKvLayer layers[2];
  std::vector<uint8_t> bytes[2], staging[2];
  std::vector<int32_t> slots(static_cast<size_t>(n_blocks));
  for (int i = 0; i < n_blocks; ++i) slots[static_cast<size_t>(i)] = i;
  for (int side = 0; side < 2; ++side) {
    ops::PagedKvLayer& l = layers[side];
    l.layout = side == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
    l.block_size = kBlock;
    l.n_kv_heads = kKvHeads;
    l.head_dim = kHeadDim;
    l.dtype = dtype;
    l.block_stride_bytes = ops::kv_layer_block_bytes(dtype, l.layout, kBlock, kKvHeads, kHeadDim);
    bytes[side].assign(l.block_stride_bytes * static_cast<size_t>(n_blocks), 0);
    l.base = bytes[side].data();
    const size_t slot = ops::kv_layer_staging_bytes(dtype, kBlock, kKvHeads, kHeadDim);
    if (slot > 0) {
      staging[side].assign(slot * static_cast<size_t>(n_blocks), 0);
      l.staging = staging[side].data();
      l.staging_stride_bytes = slot;
      l.staging_slot = slots.data();
    }
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(kKvHeads * kHeadDim);
  for (int64_t p = 0; p < ctx; ++p) {
    for (float& x : row) x = dist(rng);
    for (const ops::PagedKvLayer& l : layers) ops::kv_store(l, slots.data(), p, row.data());
  }
  for (int64_t p = 0; p < ctx; ++p) {
    for (const ops::PagedKvLayer& l : layers) ops::kv_seal(l, slots.data(), p);
  }
  std::vector<float> q(kHeads * kHeadDim), out(q.size());
  for (float& x : q) x = dist(rng);
  const int32_t pos = static_cast<int32_t>(ctx - 1);
  ops::ThreadPool pool(2);
  for (auto _ : state) {
    ops::attention(q.data(), 1, &pos, kHeads, layers[0], layers[1], slots.data(), 0.088f, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  const double kv_bytes = static_cast<double>(layers[0].block_stride_bytes + layers[1].block_stride_bytes) *
                          static_cast<double>(ctx) / kBlock;
  state.SetLabel(ops::kv_dtype_short_name(dtype));
  state.counters["kv_MiB_read"] = kv_bytes / (1 << 20);
  state.counters["GB/s"] = benchmark::Counter(kv_bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeAttention)->ArgsProduct({{0, 1, 2, 3}, {2048, 4096}})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ladder

BENCHMARK_MAIN();
