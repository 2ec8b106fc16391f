// NgramDraft: prompt-lookup decoding. The last n tokens of a sequence
// (n from max_n down to min_n) are looked up earlier in the same sequence,
// prompt and output alike; the tokens that followed the latest earlier
// occurrence are the proposal. Costs no model call, so it pays whenever the
// output copies its input (code edits, extraction, quoting, repetition).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/draft.h"

namespace ladder::engine {

class NgramDraft final : public Draft {
 public:
  // 1 <= min_n <= max_n.
  NgramDraft(int min_n = 1, int max_n = 3);

  std::string name() const override { return "ngram"; }
  void propose(std::span<DraftInput> inputs, ops::ThreadPool& pool) override;
  void release(RequestId) override {}

  // The proposal for one sequence: at most k tokens.
  std::vector<int32_t> lookup(std::span<const int32_t> tokens, int32_t k) const;

 private:
  int min_n_;
  int max_n_;
};

}  // namespace ladder::engine
