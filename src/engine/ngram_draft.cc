#include "engine/ngram_draft.h"

#include <algorithm>

#include "common/check.h"

namespace ladder::engine {

NgramDraft::NgramDraft(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {
  LADDER_CHECK(min_n_ >= 1 && min_n_ <= max_n_, "n-gram draft: 1 <= min_n <= max_n");
}

std::vector<int32_t> NgramDraft::lookup(std::span<const int32_t> tokens, int32_t k) const {
  const auto len = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(max_n_, len - 1); n >= min_n_; --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    // The latest earlier occurrence that has a continuation: it starts at
    // i (< len - n) and tokens[i + n] follows it.
    for (int64_t i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      const int64_t from = i + n;
      const int64_t count = std::min<int64_t>(k, len - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

void NgramDraft::propose(std::span<DraftInput> inputs, ops::ThreadPool& pool) {
  pool.parallel_for(static_cast<int64_t>(inputs.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      DraftInput& in = inputs[static_cast<size_t>(i)];
      in.out = lookup(in.tokens, in.k);
    }
  });
}

}  // namespace ladder::engine
