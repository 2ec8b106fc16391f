// Helpers for the grammar tests: small vocabularies, compiling GBNF, and
// asking a matcher whether a string is a complete match or a viable prefix.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocabulary.h"

namespace ladder::testing {

// 256 single-byte tokens (id = byte), then the given extra tokens (multi-byte
// pieces), then "<eos>" (an end token) and "<ctl>" (a special token).
inline std::shared_ptr<const grammar::TokenVocabulary> byte_vocabulary(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const std::string& e : extra) pieces.push_back(e);
  pieces.push_back("<eos>");
  pieces.push_back("<ctl>");
  std::vector<bool> special(pieces.size(), false);
  special[pieces.size() - 1] = true;
  const int32_t eos = static_cast<int32_t>(pieces.size() - 2);
  auto v = grammar::TokenVocabulary::create(pieces, special, {eos});
  EXPECT_TRUE(v.is_ok()) << v.status().to_string();
  return v.value();
}

inline std::shared_ptr<const grammar::CompiledGrammar> compile_gbnf(
    std::string_view gbnf, std::shared_ptr<const grammar::TokenVocabulary> vocab = nullptr) {
  if (!vocab) vocab = byte_vocabulary();
  auto g = grammar::CompiledGrammar::from_gbnf(gbnf, vocab);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string() << "\n" << gbnf;
  if (!g.is_ok()) return nullptr;
  return g.value();
}

// The whole text matches the grammar.
inline bool full_match(const std::shared_ptr<const grammar::CompiledGrammar>& g, std::string_view text) {
  grammar::GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

// The text can still be completed to a match.
inline bool viable_prefix(const std::shared_ptr<const grammar::CompiledGrammar>& g, std::string_view text) {
  grammar::GrammarMatcher m(g);
  return m.accept_bytes(text);
}

}  // namespace ladder::testing
