// GrammarCache: compiled grammars by their GBNF text, for one vocabulary, so
// that requests with the same response_format or tools share one
// CompiledGrammar and with it the per-state token classifications that a
// first request computes (compiled_grammar.h). Least recently used entries
// go first. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "grammar/compiled_grammar.h"

namespace ladder::grammar {

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity);

  // The compiled grammar for `gbnf`, compiling it on a miss (the errors of
  // CompiledGrammar::from_gbnf; failures are not cached).
  Result<std::shared_ptr<const CompiledGrammar>> get(const std::string& gbnf);

  size_t size() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace ladder::grammar
