// The input of one forward pass: a ragged batch of token runs from several
// sequences, each with its own positions and its own paged KV.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/paged_kv.h"

namespace ladder::model {

struct BatchSequence {
  std::span<const int32_t> tokens;  // the new tokens to evaluate, in order
  int64_t start_pos = 0;            // position of tokens[0]; KV holds [0, start_pos)
  // KV blocks covering positions [0, start_pos + tokens.size()); the pass
  // writes the new tokens' K and V into them.
  std::span<const int32_t> block_table;
  // Which logits to return: none, the last token's, or one per token
  // (speculative verification, scoring); kHidden: no logits, but one
  // final-norm hidden state per token (embeddings).
  enum class Logits { kNone, kLast, kAll, kHidden } logits = Logits::kLast;
  // Optional: per block-table entry, += the attention weight its keys got
  // from these tokens, summed over heads and layers (ops::AttentionSeq::
  // key_mass); empty = not wanted. Covers every entry up to the last token.
  std::span<float> key_mass;
};

// Where the KV of every layer lives (the kv module's storage, or any other
// paged layout).
using KvBuffers = ops::PagedKv;

}  // namespace ladder::model
