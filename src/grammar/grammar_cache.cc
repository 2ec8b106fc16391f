#include "grammar/grammar_cache.h"

namespace ladder::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity)
    : vocabulary_(std::move(vocabulary)), capacity_(capacity) {
  LADDER_CHECK(vocabulary_ != nullptr && capacity_ > 0,
               "GrammarCache needs a vocabulary and room for one grammar");
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(const std::string& gbnf) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(gbnf);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  // Compile outside the lock: another request may compile the same text at
  // the same time; the first to finish is kept.
  LADDER_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled,
                          CompiledGrammar::from_gbnf(gbnf, vocabulary_));
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(gbnf);
  if (it != index_.end()) return it->second->second;
  lru_.emplace_front(gbnf, compiled);
  index_.emplace(gbnf, lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

uint64_t GrammarCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

uint64_t GrammarCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace ladder::grammar
