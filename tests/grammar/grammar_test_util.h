// Helpers for the grammar tests: small vocabularies, compiling GBNF, and
// asking a matcher whether a string is a complete match or a viable prefix.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocabulary.h"
#include "test_support.h"
#include "tokenizer/tokenizer_test_util.h"

namespace ladder::testing {

// 256 single-byte tokens (id = byte), then the given extra tokens (multi-byte
// pieces), then "<eos>" (an end token) and "<ctl>" (a special token).
inline std::shared_ptr<const grammar::TokenVocabulary> byte_vocabulary(
    const std::vector<std::string>& extra = {}) {
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

// The vocabulary of ../shared/REL (a GGUF with a tokenizer), loaded once.
inline std::shared_ptr<const grammar::TokenVocabulary> shared_vocabulary(const std::string& rel) {
  static std::map<std::string, std::shared_ptr<const grammar::TokenVocabulary>> cache;
  auto it = cache.find(rel);
  if (it != cache.end()) return it->second;
  std::shared_ptr<const tokenizer::Tokenizer> tok = tokenizer::testing::load_tokenizer(rel);
  if (!tok) return nullptr;
  auto vocab = grammar::TokenVocabulary::from_tokenizer(*tok);
  cache.emplace(rel, vocab);
  return vocab;
}

inline bool mask_bit(const std::vector<uint64_t>& mask, int32_t id) {
  return ((mask[id / 64] >> (id % 64)) & 1) != 0;
}

// The mask by brute force: every token tried on the matcher and rolled back.
inline std::vector<uint64_t> brute_force_mask(grammar::GrammarMatcher& m) {
  const grammar::TokenVocabulary& v = m.grammar().vocabulary();
  std::vector<uint64_t> mask(v.mask_words(), 0);
  for (int32_t id = 0; id < v.size(); ++id) {
    bool ok = false;
    if (v.is_end(id)) {
      ok = m.is_terminated() || m.can_end();
    } else if (m.accept(id)) {
      m.rollback(1);
      ok = true;
    }
    if (ok) mask[id / 64] |= uint64_t{1} << (id % 64);
  }
  return mask;
}

struct WalkResult {
  std::string text;    // the bytes of the accepted tokens
  bool ended = false;  // an end token was sampled
  int steps = 0;
  int mismatches = 0;  // steps whose fast mask differed from brute force
};

// Samples allowed tokens at random until an end token (or max_steps): half
// the time among the single-byte ones, else among all. After
// `closing_after` steps it steers towards an end: an end token, else a
// closing byte ("\"", "}", "]", digits...), else a random single-byte token.
// With check_masks, every step's mask is compared with brute_force_mask().
inline WalkResult random_walk(const std::shared_ptr<const grammar::CompiledGrammar>& g, uint64_t seed,
                              int max_steps, int closing_after, bool check_masks) {
  const grammar::TokenVocabulary& v = g->vocabulary();
  grammar::GrammarMatcher m(g);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> mask(v.mask_words());
  WalkResult out;
  static const std::string kClosers = "\"}]0123456789eE";
  for (; out.steps < max_steps; ++out.steps) {
    EXPECT_TRUE(m.fill_mask(mask)) << "dead end after: " << out.text;
    if (check_masks) {
      std::vector<uint64_t> brute = brute_force_mask(m);
      if (brute != mask) {
        ++out.mismatches;
        for (int32_t id = 0; id < v.size(); ++id) {
          if (mask_bit(brute, id) != mask_bit(mask, id)) {
            ADD_FAILURE() << "token " << id << " \"" << v.piece(id) << "\": fast " << mask_bit(mask, id)
                          << ", brute force " << mask_bit(brute, id) << " after \"" << out.text << "\"";
            break;
          }
        }
      }
    }
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < v.size(); ++id) {
      if (mask_bit(mask, id)) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    int32_t pick = -1;
    if (out.steps >= closing_after) {
      for (int32_t id : allowed) {
        if (v.is_end(id)) pick = id;
      }
      for (size_t c = 0; pick < 0 && c < kClosers.size(); ++c) {
        for (int32_t id : allowed) {
          if (v.piece(id).size() == 1 && v.piece(id)[0] == kClosers[c] && (rng() % 4) != 0) {
            pick = id;
            break;
          }
        }
      }
      if (pick < 0) {
        std::vector<int32_t> single;
        for (int32_t id : allowed) {
          if (v.piece(id).size() == 1 || v.is_special(id)) single.push_back(id);
        }
        if (!single.empty()) pick = single[rng() % single.size()];
      }
    }
    if (pick < 0 && rng() % 2 == 0) {
      // Half the time a single-byte token: structure (quotes, brackets,
      // commas) comes up far more often than among all tokens.
      std::vector<int32_t> single;
      for (int32_t id : allowed) {
        if (v.piece(id).size() == 1 && !v.is_special(id)) single.push_back(id);
      }
      if (!single.empty()) pick = single[rng() % single.size()];
    }
    if (pick < 0) pick = allowed[rng() % allowed.size()];
    EXPECT_TRUE(m.accept(pick)) << "token " << pick << " was in the mask but not accepted";
    if (v.is_end(pick)) {
      out.ended = true;
      ++out.steps;
      break;
    }
    out.text += v.piece(pick);  // a named special token adds its text, as a marker
  }
  return out;
}

// python3-jsonschema's verdicts ("valid", "invalid", "unparsable") on
// (schema index, JSON text) pairs.
inline std::vector<std::string> python_verdicts(const std::vector<nlohmann::json>& schemas,
                                                const std::vector<std::pair<size_t, std::string>>& texts) {
  std::string input = nlohmann::json(schemas).dump() + "\n";
  for (const auto& [i, text] : texts) input += nlohmann::json({{"schema", i}, {"text", text}}).dump() + "\n";
  CommandResult r = run_command(
      {"/usr/bin/python3", std::string(LADDER_TEST_SOURCE_DIR) + "/grammar/validate_json.py"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) out.push_back(line);
  EXPECT_EQ(out.size(), texts.size()) << r.err;
  return out;
}

}  // namespace ladder::testing
