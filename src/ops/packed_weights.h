// Weights repacked once, at model load, into the layout the fastest kernel
// streams. Today: Q8_0 and Q4_0 on AVX-512 VNNI CPUs (AVX3_DL), where 16
// output columns are interleaved per 32-element block so a decode step does
// no shuffling at all (the unpacked kernel transposes, and for Q4_0 also
// unpacks nibbles, on every call). Per 512 weights: Q8_0 576 bytes against
// its own 544, Q4_0 288 like its own (plus a padding block when n_in / 32 is
// odd). The original need not stay resident. Results are bit-identical to
// matmul() on the unpacked weights.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hwy/aligned_allocator.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

struct PackedWeights {
  TensorType type = TensorType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  int64_t target = 0;  // Highway target the layout is for
  size_t bytes = 0;
  hwy::AlignedFreeUniquePtr<uint8_t[]> data;

  bool empty() const { return data == nullptr; }
};

// Packs w when the active target has a packed kernel for its type, else
// returns an empty PackedWeights (matmul then reads w as usual).
PackedWeights pack_weights(const WeightMatrix& w, ThreadPool& pool);

// matmul() that reads `packed` instead of w.data when packed is non-empty and
// was made for the active target; w must describe the same matrix. Otherwise
// it reads w.data, so w.data may be released after packing only while the
// dispatch target cannot change (it cannot outside tests).
void matmul(const WeightMatrix& w, const PackedWeights& packed, const float* x, int64_t rows, float* y,
            ThreadPool& pool);

}  // namespace ladder::ops
