// What the per-target attention kernels (attention-inl.h) receive from
// attention.cc. Internal to ops/.
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace ladder::ops::detail {

// Up to the target's query-tile size of consecutive rows of one sequence.
struct AttentionTile {
  int64_t row0 = 0;
  int64_t n_rows = 0;
  const int32_t* block_table = nullptr;
};

// One batched attention call: query row r attends to positions [0, q_pos[r]]
// of its sequence; rows are grouped into tiles.
struct AttentionArgs {
  const float* q = nullptr;  // [rows][n_heads][head_dim]
  const int32_t* q_pos = nullptr;
  const AttentionTile* tiles = nullptr;
  int n_heads = 0;
  const PagedKvLayer* k = nullptr;
  const PagedKvLayer* v = nullptr;
  float scale = 1.0f;
  float* out = nullptr;  // [rows][n_heads][head_dim]
};

}  // namespace ladder::ops::detail
