// GrammarFsm: a Grammar compiled for matching. Each rule becomes one
// deterministic automaton whose edges read either a terminal symbol range or
// a whole rule (a reference), so repetition, alternation, character classes
// and small non-recursive rules live inside one automaton instead of as many
// little rules; the Earley recogniser (earley.h) runs over these automata.
//
// Terminal symbols: bytes 0-255, and kFirstTokenSymbol + k for the k-th token
// the grammar names with <"text"> (token_texts()[k]). Character classes become
// byte-level paths of their UTF-8 encodings, so matching never sees a code
// point, only bytes.
//
// Every state left in the automata can still reach a final state, and every
// rule can derive some finite string (rules that cannot are an error), so a
// non-empty Earley set always means the input so far can still be completed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar/grammar.h"

namespace ladder::grammar {

inline constexpr uint32_t kFirstTokenSymbol = 256;

struct TerminalEdge {
  uint16_t lo = 0;
  uint16_t hi = 0;  // inclusive symbol range
  int32_t target = -1;
};

struct RuleEdge {
  int32_t rule = -1;
  int32_t target = -1;
};

struct FsmState {
  int32_t rule = -1;
  uint32_t terminal_begin = 0;  // [begin, end) into the terminal edges, sorted by lo, disjoint
  uint32_t terminal_end = 0;
  uint32_t rule_begin = 0;  // [begin, end) into the rule edges
  uint32_t rule_end = 0;
  bool final = false;
};

// Limits on what a grammar may expand to (repetitions are unrolled).
inline constexpr int64_t kMaxNfaStates = 4'000'000;
inline constexpr int64_t kMaxFsmStates = 1'000'000;

class GrammarFsm {
 public:
  // Errors (kInvalidArgument): a rule that can never be completed, or
  // automata that would pass kMaxNfaStates / kMaxFsmStates.
  static Result<GrammarFsm> compile(const Grammar& grammar);

  int32_t n_states() const { return static_cast<int32_t>(states_.size()); }
  int32_t n_rules() const { return static_cast<int32_t>(rule_start_.size()); }
  const FsmState& state(int32_t s) const { return states_[s]; }
  std::span<const TerminalEdge> terminal_edges(int32_t s) const {
    const FsmState& st = states_[s];
    return {terminal_edges_.data() + st.terminal_begin, st.terminal_end - st.terminal_begin};
  }
  std::span<const RuleEdge> rule_edges(int32_t s) const {
    const FsmState& st = states_[s];
    return {rule_edges_.data() + st.rule_begin, st.rule_end - st.rule_begin};
  }
  // The target of s's terminal edge that reads `symbol`, or -1.
  int32_t next(int32_t s, uint32_t symbol) const;

  int32_t rule_start(int32_t rule) const { return rule_start_[rule]; }
  bool rule_nullable(int32_t rule) const { return rule_nullable_[rule]; }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  int32_t root_rule() const { return root_rule_; }
  int32_t root_state() const { return rule_start_[root_rule_]; }
  // Texts of the tokens named by <"text">; symbol kFirstTokenSymbol + k.
  const std::vector<std::string>& token_texts() const { return token_texts_; }

 private:
  friend class FsmBuilder;
  std::vector<FsmState> states_;
  std::vector<TerminalEdge> terminal_edges_;
  std::vector<RuleEdge> rule_edges_;
  std::vector<int32_t> rule_start_;
  std::vector<bool> rule_nullable_;
  std::vector<std::string> rule_names_;
  std::vector<std::string> token_texts_;
  int32_t root_rule_ = -1;
};

}  // namespace ladder::grammar
