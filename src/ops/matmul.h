// Matrix products against weights stored in any supported tensor type, used in
// place (no dequantize-all). Batch invariant: y[r][o] is computed by the same
// sequence of operations whatever `rows` is and however the rows were grouped
// into calls, so a sequence's logits do not depend on its batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"
#include "common/tensor_type.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

// A weight matrix W: n_out rows of n_in elements each, row-major, each row
// row_bytes(type, n_in) bytes long ([n_out][n_in] in `type`).
struct WeightMatrix {
  TensorType type = TensorType::kF32;
  const void* data = nullptr;
  int64_t n_in = 0;
  int64_t n_out = 0;
};

struct PackedWeights;  // ops/packed_weights.h

// One product of matmul_group(): y[rows][w->n_out] = x * W^T, reading
// `packed` instead of w->data when it is non-empty and made for the active
// target (see packed_weights.h).
struct MatmulOutput {
  const WeightMatrix* w = nullptr;
  const PackedWeights* packed = nullptr;  // may be null
  float* y = nullptr;
};

// Several products of the same input (Q, K and V; gate and up) in one
// parallel dispatch, quantizing x once. Each y is bit-identical to its own
// matmul() call.
void matmul_group(std::span<const MatmulOutput> outs, const float* x, int64_t rows, ThreadPool& pool);

// Whether matmul() accepts weights of this type with rows of n_in elements.
Status check_matmul_support(TensorType type, int64_t n_in);

// y[rows][n_out] = x[rows][n_in] * W^T.
void matmul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool);

// out[i][0..n_in) = dequantized row ids[i] of `table` (embedding look-up).
void embedding_lookup(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out);

// The scalar reference of matmul, for tests: same math, plain loops.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t rows, float* y);

}  // namespace ladder::ops
