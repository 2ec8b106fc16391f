// The induction rule computed directly on token ids (never by a model), and
// prompts on which it is defined: the independent side of the retrieval
// model's tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ladder::testing {

// For every position t: the token that followed every earlier occurrence of
// seq[t] (occurrences i < t, successor seq[i + 1]) when they all agree;
// nullopt when seq[t] is new or its successors differ.
inline std::vector<std::optional<int32_t>> induction_targets(const std::vector<int32_t>& seq) {
  struct Seen {
    int32_t next;
    bool ambiguous;
  };
  std::unordered_map<int32_t, Seen> successor;
  std::vector<std::optional<int32_t>> out(seq.size());
  for (size_t t = 0; t < seq.size(); ++t) {
    if (t > 0) {
      auto [it, fresh] = successor.try_emplace(seq[t - 1], Seen{seq[t], false});
      if (!fresh && it->second.next != seq[t]) it->second.ambiguous = true;
    }
    auto it = successor.find(seq[t]);
    if (it != successor.end() && !it->second.ambiguous) out[t] = it->second.next;
  }
  return out;
}

// The continuation the rule dictates, for up to n tokens: it stops at the
// first step where the rule is undefined.
inline std::vector<int32_t> induction_continuation(std::vector<int32_t> seq, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto next = induction_targets(seq).back();
    if (!next) break;
    out.push_back(*next);
    seq.push_back(*next);
  }
  return out;
}

// A prompt of phrases from a fixed successor function: `pool` tokens and
// `separators` separator tokens (drawn from [3, n_vocab)) form one random
// cycle; the prompt walks it from random starting points, each walk ending at
// a separator. Every non-separator token is therefore always followed by the
// same token, and the rule is defined at each of its repeats. BOS first.
inline std::vector<int32_t> phrase_walk_prompt(int64_t n_vocab, int pool, int separators, size_t length,
                                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  for (int32_t t = 3; t < n_vocab; ++t) ids.push_back(t);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(static_cast<size_t>(pool + separators));
  std::unordered_set<int32_t> is_sep(ids.begin(), ids.begin() + separators);
  std::shuffle(ids.begin(), ids.end(), rng);  // the cycle
  std::unordered_map<int32_t, size_t> index;
  for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = i;
  std::vector<int32_t> seq = {1};
  while (seq.size() < length) {
    size_t at = rng() % ids.size();
    while (is_sep.count(ids[at]) != 0) at = (at + 1) % ids.size();
    for (; seq.size() < length; at = (at + 1) % ids.size()) {
      seq.push_back(ids[at]);
      if (is_sep.count(ids[at]) != 0) break;
    }
  }
  return seq;
}

}  // namespace ladder::testing
