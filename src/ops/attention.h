// Causal attention over a paged KV cache. The cache of one layer is a set of
// fixed-size blocks; a sequence's block table lists, in order, the blocks
// holding its positions [0, block_size), [block_size, 2*block_size), ...
// An entry < 0 is an evicted block (kv/kv_eviction.h): its positions are
// not attended, and every other key keeps its position, so a query's causal
// range and each key's place in the reduction order stay those of the
// original positions. A query's own block is never evicted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/tensor_type.h"
#include "ops/thread_pool.h"

namespace ladder::ops {

// How a block orders its elements. Values are token-major; keys are stored
// transposed (dim-major), so that one query's scores against a block's keys
// come out one key per vector lane, with no horizontal sum per key.
enum class KvLayout {
  kTokenMajor,  // [block_size][n_kv_heads][head_dim]  (V)
  kDimMajor,    // [n_kv_heads][head_dim][block_size]  (K)
};

// Layout of one layer's K (or V) storage:
//   base + block_id * block_stride_bytes -> one block, ordered by `layout`
struct PagedKvLayer {
  uint8_t* base = nullptr;
  size_t block_stride_bytes = 0;
  int block_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
  TensorType dtype = TensorType::kF32;  // a format of ops/kv_codec.h
  KvLayout layout = KvLayout::kTokenMajor;
  // Staged formats (Q4) only: staging slots, [slot][block_size][n_kv_heads]
  // [head_dim] f16 each, and the slot of each block id (-1: none). The
  // storage owns both; the kv module assigns slots.
  uint8_t* staging = nullptr;
  size_t staging_stride_bytes = 0;
  const int32_t* staging_slot = nullptr;
};

// Writes one token's vectors ([n_kv_heads][head_dim] floats) at position pos
// of the sequence with this block table, in the layer's layout.
void kv_store(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos, const float* vec);
// After every kv_store of a step: when pos is the last position of its block
// and the format is staged (Q4), quantizes that block from its staging slot.
// Does nothing otherwise. Blocks of different rows may be sealed in parallel.
void kv_seal(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos);

// How scores are shaped after scale * q.k, before the softmax (every field's
// zero value leaves them as they are):
//   window:  sliding-window attention; a query at position p sees the keys
//            at positions p - window < j <= p only (mistral, gemma2/3's local
//            layers; llama.cpp's rule).
//   softcap: gemma2's soft cap, score = softcap * tanh(score / softcap).
struct AttentionScoring {
  int64_t window = 0;
  float softcap = 0.0f;
};

// For each of n_q queries (q: [n_q][n_heads][head_dim]) at positions q_pos,
// attends to keys/values at positions [0, q_pos[i]] of one sequence, GQA with
// n_heads / n_kv_heads query heads per KV head. out: [n_q][n_heads][head_dim].
// K must be stored dim-major and V token-major.
// The reduction order over keys is fixed by key position alone, so a query's
// output does not depend on how many queries share the call.
void attention(const float* q, int64_t n_q, const int32_t* q_pos, int n_heads, const PagedKvLayer& k,
               const PagedKvLayer& v, const int32_t* block_table, float scale, float* out, ThreadPool& pool,
               AttentionScoring scoring = {});

// One sequence of a batched attention call: its queries are rows
// [row0, row0 + n_rows) of q, q_pos and out.
struct AttentionSeq {
  int64_t row0 = 0;
  int64_t n_rows = 0;
  const int32_t* block_table = nullptr;
  // Optional (KV eviction by attention, kv/kv_eviction.h): key_mass[b] +=
  // the softmax weight that the keys of table entry b received, summed over
  // the sequence's queries and heads in this call (each query-head pair
  // gives 1 in all). Room for every entry up to the last query's position.
  float* key_mass = nullptr;
};

// attention() for several sequences at once (a ragged decode or mixed
// batch) in one parallel dispatch. seqs must cover rows 0, 1, ... in order.
// Each row's output is bit-identical to attention() on that sequence alone.
void attention_batch(const float* q, const int32_t* q_pos, std::span<const AttentionSeq> seqs, int n_heads,
                     const PagedKvLayer& k, const PagedKvLayer& v, float scale, float* out, ThreadPool& pool,
                     AttentionScoring scoring = {});

// Scalar reference of attention(), for tests.
void attention_reference(const float* q, int64_t n_q, const int32_t* q_pos, int n_heads,
                         const PagedKvLayer& k, const PagedKvLayer& v, const int32_t* block_table,
                         float scale, float* out, AttentionScoring scoring = {});

}  // namespace ladder::ops
