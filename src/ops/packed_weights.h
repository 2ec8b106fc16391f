// Weights repacked once, at model load, into the layout the fastest kernel
// streams. Q8_0, Q4_0, Q4_K, Q5_K and Q6_K on AVX-512 VNNI CPUs (AVX3_DL),
// where 16 output columns are interleaved per 32-element block so a decode
// step does no shuffling at all (the unpacked kernels transpose or reduce
// across lanes, and unpack nibbles, on every call). Per 16 columns x 256
// weights: Q8_0 4352 bytes and Q4_0 2304, their own sizes (plus a padding
// block when n_in / 32 is odd), Q4_K 2368 against 2304, Q5_K 2880 against
// 2816, Q6_K 3392 against 3360 (layouts in matmul_packed-inl.h). Q8_0 and
// Q4_0 stay as stored where this machine decodes them faster so
// (ops/kernel_choice.h). F16 and BF16 weights on CPUs with AMX-BF16 are
// packed for tiles (1 KiB per 16 columns x 32 elements, their own size); they
// then run on tiles at every batch size, with bf16x3 arithmetic
// (matmul_amx_bf16-inl.h). Without those tiles, BF16 weights on CPUs with
// AVX512-BF16 take the same layout and run on vdpbf16ps at every batch size,
// with bf16x2 arithmetic (ops/bf16_dot.h). Elsewhere F32, F16 and BF16 weights on the x86
// vector targets are packed for decode: each tile's 4 (AVX-512) or 2 (AVX2)
// columns interleaved one vector's worth of elements at a time, so a decode
// step streams one contiguous run instead of 4 rows at once (on the 2-vCPU
// Zen 5 this took F16 at 768 inputs from ~63% to ~90% of the read roofline);
// the same arithmetic in the same order, so the same bits as the stored
// layout. The original need not stay resident.
//
// Exactness: Q8_0 and Q4_0 results are bit-identical to matmul() on the
// unpacked weights. Q4_K, Q5_K and Q6_K results are not (the unpacked kernels
// sum a column's products in another order; Q5_K has no unpacked integer
// kernel at all and otherwise dequantizes to F32); they are within the same
// bound of the scalar reference (matmul_reference) and, like every matmul,
// batch invariant: a row's output is the same bits whatever the batch, the
// chunking and the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/page_memory.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

// Which packed layout a PackedWeights holds.
enum class PackedLayout {
  kColumns16,   // quantized types: 16 columns interleaved per block (AVX3_DL)
  kAmxBf16,     // F16/BF16 for AMX-BF16 tiles
  kBf16Dot,     // BF16 for vdpbf16ps: the AMX-BF16 layout, run by the vector dot kernel
  kFloatChunks  // F32/F16/BF16: a float tile's columns interleaved per vector
};

struct PackedWeights {
  TensorType type = TensorType::kF32;
  PackedLayout layout = PackedLayout::kColumns16;
  int64_t n_in = 0;
  int64_t n_out = 0;
  int64_t target = 0;  // Highway target the layout is for
  size_t bytes = 0;
  PageMemory data;  // huge pages where the OS gives them: decode streams it

  bool empty() const { return data.empty(); }
};

// Packs w when the active target has a packed kernel for its type and this
// machine's kernel choice wants it (Q8_0 and Q4_0 may stay as stored where
// that decodes faster: ops/kernel_choice.h), else returns an empty
// PackedWeights (matmul then reads w as usual).
PackedWeights pack_weights(const WeightMatrix& w, ThreadPool& pool);

// Whether the active target has a packed layout for `type` (F16 and BF16:
// the AMX-BF16 layout where amx_bf16_active(), ops/amx.h, BF16 the same
// layout where bf16_dot_active(), ops/bf16_dot.h; else, as F32, the float
// chunks on x86 vector targets).
bool has_packed_layout(TensorType type);

// Packs whenever the target has the layout, whatever the kernel choice
// (benchmarks compare layouts); empty otherwise.
PackedWeights pack_weights_always(const WeightMatrix& w, ThreadPool& pool);

// Bytes of a packed n_out x n_in matrix of `type` (has_packed_layout(type)).
size_t packed_weight_bytes(TensorType type, int64_t n_in, int64_t n_out);

// matmul() that reads `packed` instead of w.data when packed is non-empty and
// was made for the active target; w must describe the same matrix. Otherwise
// it reads w.data, so w.data may be released after packing only while the
// dispatch target cannot change (it cannot outside tests).
void matmul(const WeightMatrix& w, const PackedWeights& packed, const float* x, int64_t rows, float* y,
            ThreadPool& pool);

}  // namespace ladder::ops
