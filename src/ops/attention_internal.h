// What the per-target attention kernels (attention-inl.h) receive from
// attention.cc. Internal to ops/.
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace ladder::ops::detail {

// One batched attention call, flattened to rows: query row r attends to
// positions [0, q_pos[r]] of the sequence whose block table is row_tables[r].
struct AttentionArgs {
  const float* q = nullptr;  // [rows][n_heads][head_dim]
  const int32_t* q_pos = nullptr;
  const int32_t* const* row_tables = nullptr;
  int n_heads = 0;
  const PagedKvLayer* k = nullptr;
  const PagedKvLayer* v = nullptr;
  float scale = 1.0f;
  float* out = nullptr;  // [rows][n_heads][head_dim]
};

}  // namespace ladder::ops::detail
