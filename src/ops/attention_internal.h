// What the per-target attention kernels (attention-inl.h) receive from
// attention.cc. Internal to ops/.
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace ladder::ops::detail {

// Queries in one tile of a quantized KV format: each K and V block is
// decoded once per tile, so prefill tiles are wide (float formats use the
// target's query tile, AttentionQueryTile()).
inline constexpr int64_t kQuantTileQueries = 32;

// Queries that share one KV head of one sequence: rows [row0, row0 +
// n_rows) x query heads [head0, head0 + n_heads), at most the target's
// query-tile size of them.
struct AttentionTile {
  int64_t row0 = 0;
  int64_t n_rows = 0;
  int64_t head0 = 0;
  int64_t n_heads = 0;
  const int32_t* block_table = nullptr;
  // When the sequence asks for key mass: this tile's own [n_mass_blocks]
  // sums, added into AttentionSeq::key_mass in tile order after the tasks.
  float* mass = nullptr;
  int64_t n_mass_blocks = 0;
  int64_t seq = 0;  // index of the tile's sequence in the call
};

// One batched attention call: query row r attends to positions [0, q_pos[r]]
// of its sequence; (row, head) queries are grouped into tiles, one task each.
struct AttentionArgs {
  const float* q = nullptr;  // [rows][n_heads][head_dim]
  const int32_t* q_pos = nullptr;
  const AttentionTile* tiles = nullptr;
  int n_heads = 0;
  const PagedKvLayer* k = nullptr;
  const PagedKvLayer* v = nullptr;
  float scale = 1.0f;
  AttentionScoring scoring;
  float* out = nullptr;  // [rows][n_heads][head_dim]
};

}  // namespace ladder::ops::detail
