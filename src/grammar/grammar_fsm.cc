// GrammarFsm::compile: Grammar -> one DFA per kept rule.
//
//   1. Which rules to keep as rules: the root, every recursive rule, and any
//      rule too big to copy into each place that uses it. The others are
//      inlined (their expression is expanded where they are referenced), so
//      that e.g. a string's characters, a number's digits and the whitespace
//      between JSON tokens are steps of one automaton rather than a rule each.
//   2. Thompson construction of an NFA per kept rule (repetitions unrolled,
//      character classes as UTF-8 byte paths).
//   3. Subset construction over the symbol ranges and rule references.
//   4. Productivity (a rule must derive some finite string) and trimming of
//      states that cannot reach a final state; nullability per rule.
#include "grammar/grammar_fsm.h"

#include <algorithm>
#include <unordered_map>

#include <boost/container_hash/hash.hpp>

#include "grammar/utf8_ranges.h"

namespace ladder::grammar {
namespace {

// Inline a non-recursive rule when its automaton is at most this big, or when
// it is used once and at most kInlineOnce big. Small lexical rules (the
// whitespace between JSON tokens, one string character) are worth copying:
// a rule boundary inside a token makes that token context-dependent, which
// costs a check at every mask (compiled_grammar.h).
constexpr int64_t kInlineSmall = 128;
constexpr int64_t kInlineOnce = 4096;

struct NfaEdge {
  enum class Kind : uint8_t { kEpsilon, kTerminal, kRule };
  Kind kind = Kind::kEpsilon;
  uint16_t lo = 0;
  uint16_t hi = 0;
  int32_t rule = -1;  // compiled rule id for kRule
  int32_t to = -1;
};

void collect_refs(const Expr& e, std::vector<int32_t>* refs) {
  if (e.kind == Expr::Kind::kRuleRef) refs->push_back(e.rule);
  for (const Expr& c : e.children) collect_refs(c, refs);
}

}  // namespace

class FsmBuilder {
 public:
  explicit FsmBuilder(const Grammar& g) : g_(g) {}

  Result<GrammarFsm> build() {
    analyse_rules();
    // Compiled ids for the kept rules, root first.
    compiled_id_.assign(g_.rules.size(), -1);
    std::vector<int32_t> kept;
    kept.push_back(g_.root);
    for (size_t r = 0; r < g_.rules.size(); ++r) {
      if (static_cast<int32_t>(r) != g_.root && reachable_[r] && !inline_[r])
        kept.push_back(static_cast<int32_t>(r));
    }
    for (size_t i = 0; i < kept.size(); ++i) compiled_id_[kept[i]] = static_cast<int32_t>(i);
    fsm_.root_rule_ = 0;

    std::vector<RuleDfa> dfas(kept.size());
    int64_t total_states = 0;
    for (size_t i = 0; i < kept.size(); ++i) {
      fsm_.rule_names_.push_back(g_.rules[kept[i]].name);
      LADDER_RETURN_IF_ERROR(build_nfa(kept[i]));
      LADDER_RETURN_IF_ERROR(determinize(&dfas[i], &total_states));
    }
    LADDER_RETURN_IF_ERROR(finish(dfas));
    return std::move(fsm_);
  }

 private:
  struct DfaState {
    std::vector<TerminalEdge> terminals;
    std::vector<RuleEdge> rules;
    bool final = false;
  };
  struct RuleDfa {
    std::vector<DfaState> states;  // [0] is the start
  };

  // Reachability from the root, reference counts, recursion and sizes.
  void analyse_rules() {
    const size_t n = g_.rules.size();
    std::vector<std::vector<int32_t>> refs(n);
    for (size_t r = 0; r < n; ++r) collect_refs(g_.rules[r].body, &refs[r]);
    reachable_.assign(n, false);
    std::vector<int32_t> stack = {g_.root};
    reachable_[g_.root] = true;
    while (!stack.empty()) {
      int32_t r = stack.back();
      stack.pop_back();
      for (int32_t t : refs[r]) {
        if (!reachable_[t]) {
          reachable_[t] = true;
          stack.push_back(t);
        }
      }
    }
    std::vector<int32_t> ref_count(n, 0);
    for (size_t r = 0; r < n; ++r) {
      if (!reachable_[r]) continue;
      for (int32_t t : refs[r]) ++ref_count[t];
    }
    // A rule is recursive when it reaches itself.
    std::vector<bool> recursive(n, false);
    for (size_t r = 0; r < n; ++r) {
      if (!reachable_[r]) continue;
      std::vector<bool> seen(n, false);
      std::vector<int32_t> work(refs[r].begin(), refs[r].end());
      while (!work.empty() && !recursive[r]) {
        int32_t t = work.back();
        work.pop_back();
        if (t == static_cast<int32_t>(r)) recursive[r] = true;
        if (seen[t]) continue;
        seen[t] = true;
        work.insert(work.end(), refs[t].begin(), refs[t].end());
      }
    }
    inline_.assign(n, false);
    cost_.assign(n, -1);
    for (size_t r = 0; r < n; ++r) {
      if (!reachable_[r] || recursive[r] || static_cast<int32_t>(r) == g_.root) continue;
      int64_t c = rule_cost(static_cast<int32_t>(r), recursive);
      inline_[r] = c <= kInlineSmall || (ref_count[r] == 1 && c <= kInlineOnce);
    }
  }

  // NFA size of a non-recursive rule with its inlinable references expanded
  // (memoized; references to recursive rules count one edge).
  int64_t rule_cost(int32_t r, const std::vector<bool>& recursive) {
    if (cost_[r] >= 0) return cost_[r];
    cost_[r] = expr_cost(g_.rules[r].body, recursive);
    return cost_[r];
  }

  int64_t expr_cost(const Expr& e, const std::vector<bool>& recursive) {
    constexpr int64_t kCap = int64_t{1} << 40;
    switch (e.kind) {
      case Expr::Kind::kLiteral: return static_cast<int64_t>(e.text.size()) + 1;
      case Expr::Kind::kCharClass: {
        // Roughly one state per byte of each range's longest encoding.
        int64_t c = 1;
        for (const CodepointRange& r : e.ranges)
          c += r.hi < 0x80 ? 1 : r.hi < 0x800 ? 2 : r.hi < 0x10000 ? 3 : 4;
        return c;
      }
      case Expr::Kind::kToken: return 2;
      case Expr::Kind::kRuleRef:
        if (recursive[e.rule]) return 2;
        return rule_cost(e.rule, recursive);
      case Expr::Kind::kSequence:
      case Expr::Kind::kAlternation: {
        int64_t c = 1;
        for (const Expr& ch : e.children) c = std::min(kCap, c + expr_cost(ch, recursive));
        return c;
      }
      case Expr::Kind::kRepeat: {
        int64_t copies = e.max == kUnbounded ? std::max(1, e.min) + 1 : std::max(1, e.max);
        return std::min(kCap, 2 + copies * expr_cost(e.children[0], recursive));
      }
    }
    return 1;
  }

  // --- NFA -------------------------------------------------------------------

  int32_t new_state() {
    nfa_.emplace_back();
    return static_cast<int32_t>(nfa_.size() - 1);
  }
  void add_epsilon(int32_t from, int32_t to) {
    nfa_[from].push_back({NfaEdge::Kind::kEpsilon, 0, 0, -1, to});
  }
  void add_terminal(int32_t from, uint32_t lo, uint32_t hi, int32_t to) {
    nfa_[from].push_back(
        {NfaEdge::Kind::kTerminal, static_cast<uint16_t>(lo), static_cast<uint16_t>(hi), -1, to});
  }

  Status build_nfa(int32_t rule) {
    nfa_.clear();
    nfa_start_ = new_state();
    int32_t end = -1;
    LADDER_RETURN_IF_ERROR(build_expr(g_.rules[rule].body, nfa_start_, &end));
    nfa_final_ = end;
    return Status::ok();
  }

  Status check_size() const {
    if (static_cast<int64_t>(nfa_.size()) > kMaxNfaStates) {
      return invalid_argument("grammar too large: expanding its repetitions needs more than " +
                              std::to_string(kMaxNfaStates) + " automaton states");
    }
    return Status::ok();
  }

  Status build_expr(const Expr& e, int32_t from, int32_t* to) {
    LADDER_RETURN_IF_ERROR(check_size());
    switch (e.kind) {
      case Expr::Kind::kLiteral: {
        int32_t cur = from;
        for (char c : e.text) {
          int32_t n = new_state();
          uint8_t b = static_cast<uint8_t>(c);
          add_terminal(cur, b, b, n);
          cur = n;
        }
        *to = cur;
        return Status::ok();
      }
      case Expr::Kind::kCharClass: {
        int32_t end = new_state();
        std::vector<ByteSequence> seqs;
        for (const CodepointRange& r : e.ranges) utf8_sequences(r.lo, r.hi, &seqs);
        for (const ByteSequence& seq : seqs) {
          int32_t cur = from;
          for (size_t k = 0; k + 1 < seq.size(); ++k) {
            int32_t n = new_state();
            add_terminal(cur, seq[k].lo, seq[k].hi, n);
            cur = n;
          }
          add_terminal(cur, seq.back().lo, seq.back().hi, end);
        }
        *to = end;
        return Status::ok();
      }
      case Expr::Kind::kToken: {
        auto it = token_index_.find(e.text);
        uint32_t k = 0;
        if (it == token_index_.end()) {
          k = static_cast<uint32_t>(fsm_.token_texts_.size());
          if (kFirstTokenSymbol + k > 0xFFFF)
            return invalid_argument("grammar names too many distinct tokens");
          fsm_.token_texts_.push_back(e.text);
          token_index_.emplace(e.text, k);
        } else {
          k = it->second;
        }
        int32_t end = new_state();
        add_terminal(from, kFirstTokenSymbol + k, kFirstTokenSymbol + k, end);
        *to = end;
        return Status::ok();
      }
      case Expr::Kind::kRuleRef: {
        if (inline_[e.rule]) return build_expr(g_.rules[e.rule].body, from, to);
        int32_t end = new_state();
        nfa_[from].push_back({NfaEdge::Kind::kRule, 0, 0, compiled_id_[e.rule], end});
        *to = end;
        return Status::ok();
      }
      case Expr::Kind::kSequence: {
        int32_t cur = from;
        for (const Expr& c : e.children) {
          int32_t next = -1;
          LADDER_RETURN_IF_ERROR(build_expr(c, cur, &next));
          cur = next;
        }
        *to = cur;
        return Status::ok();
      }
      case Expr::Kind::kAlternation: {
        int32_t end = new_state();
        for (const Expr& c : e.children) {
          int32_t start = new_state();
          add_epsilon(from, start);
          int32_t branch_end = -1;
          LADDER_RETURN_IF_ERROR(build_expr(c, start, &branch_end));
          add_epsilon(branch_end, end);
        }
        *to = end;
        return Status::ok();
      }
      case Expr::Kind::kRepeat: {
        // Each copy starts at a fresh state so that no loop's back edge can
        // reach into a neighbouring copy.
        const Expr& body = e.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < e.min; ++i) {
          int32_t start = new_state();
          add_epsilon(cur, start);
          LADDER_RETURN_IF_ERROR(build_expr(body, start, &cur));
        }
        if (e.max == kUnbounded) {
          int32_t loop = new_state();
          add_epsilon(cur, loop);
          int32_t body_end = -1;
          LADDER_RETURN_IF_ERROR(build_expr(body, loop, &body_end));
          add_epsilon(body_end, loop);
          *to = loop;
          return Status::ok();
        }
        int32_t end = new_state();
        add_epsilon(cur, end);
        for (int32_t i = e.min; i < e.max; ++i) {
          int32_t start = new_state();
          add_epsilon(cur, start);
          LADDER_RETURN_IF_ERROR(build_expr(body, start, &cur));
          add_epsilon(cur, end);
        }
        *to = end;
        return Status::ok();
      }
    }
    return internal_error("unknown expression kind");
  }

  // --- subset construction ---------------------------------------------------

  struct StateSetHash {
    size_t operator()(const std::vector<int32_t>& v) const { return boost::hash_range(v.begin(), v.end()); }
  };

  void closure(std::vector<int32_t>* set) {
    std::vector<int32_t>& work = closure_work_;
    work.assign(set->begin(), set->end());
    for (int32_t s : work) mark_[s] = mark_stamp_;
    while (!work.empty()) {
      int32_t s = work.back();
      work.pop_back();
      for (const NfaEdge& e : nfa_[s]) {
        if (e.kind == NfaEdge::Kind::kEpsilon && mark_[e.to] != mark_stamp_) {
          mark_[e.to] = mark_stamp_;
          set->push_back(e.to);
          work.push_back(e.to);
        }
      }
    }
    std::sort(set->begin(), set->end());
    ++mark_stamp_;
  }

  Status determinize(RuleDfa* dfa, int64_t* total_states) {
    mark_.assign(nfa_.size(), 0);
    mark_stamp_ = 1;
    // NFA state sets by DFA state id; `pending` points at the keys (a
    // node-based map keeps them in place), each set stored once.
    std::unordered_map<std::vector<int32_t>, int32_t, StateSetHash> ids;
    std::vector<const std::vector<int32_t>*> pending;
    // `set` is scratch: closed in place, copied only when it is a new state.
    auto intern = [&](std::vector<int32_t>& set) -> int32_t {
      closure(&set);
      if (auto it = ids.find(set); it != ids.end()) return it->second;
      auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(dfa->states.size()));
      dfa->states.emplace_back();
      pending.push_back(&it->first);
      return it->second;
    };
    std::vector<int32_t> targets = {nfa_start_};
    intern(targets);
    // Per state, reused: its terminal edges, their range ends, its rule edges.
    std::vector<const NfaEdge*> terms;
    std::vector<uint32_t> cuts;
    std::vector<std::pair<int32_t, int32_t>> by_rule;  // (rule, NFA target)
    for (size_t next = 0; next < pending.size(); ++next) {
      if (*total_states + static_cast<int64_t>(dfa->states.size()) > kMaxFsmStates) {
        return invalid_argument("grammar too large: its automata need more than " +
                                std::to_string(kMaxFsmStates) + " states");
      }
      const std::vector<int32_t>& members = *pending[next];
      DfaState out;
      terms.clear();
      cuts.clear();
      by_rule.clear();
      for (int32_t s : members) {
        if (s == nfa_final_) out.final = true;
        for (const NfaEdge& e : nfa_[s]) {
          if (e.kind == NfaEdge::Kind::kTerminal) {
            terms.push_back(&e);
            cuts.push_back(e.lo);
            cuts.push_back(static_cast<uint32_t>(e.hi) + 1);
          } else if (e.kind == NfaEdge::Kind::kRule) {
            by_rule.emplace_back(e.rule, e.to);
          }
        }
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (size_t c = 0; c + 1 < cuts.size(); ++c) {
        const uint32_t lo = cuts[c];
        const uint32_t hi = cuts[c + 1] - 1;
        targets.clear();
        for (const NfaEdge* e : terms) {
          if (e->lo <= lo && hi <= e->hi) targets.push_back(e->to);
        }
        if (targets.empty()) continue;
        std::sort(targets.begin(), targets.end());
        targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
        int32_t t = intern(targets);
        if (!out.terminals.empty() && out.terminals.back().target == t &&
            out.terminals.back().hi + 1u == lo) {
          out.terminals.back().hi = static_cast<uint16_t>(hi);
        } else {
          out.terminals.push_back({static_cast<uint16_t>(lo), static_cast<uint16_t>(hi), t});
        }
      }
      std::sort(by_rule.begin(), by_rule.end());
      for (size_t i = 0; i < by_rule.size();) {
        targets.clear();
        size_t j = i;
        for (; j < by_rule.size() && by_rule[j].first == by_rule[i].first; ++j) {
          if (targets.empty() || targets.back() != by_rule[j].second) targets.push_back(by_rule[j].second);
        }
        out.rules.push_back({by_rule[i].first, intern(targets)});
        i = j;
      }
      dfa->states[next] = std::move(out);
    }
    *total_states += static_cast<int64_t>(dfa->states.size());
    return Status::ok();
  }

  // --- productivity, trimming, layout ----------------------------------------

  // States of `dfa` that can reach a final state, given which rules can
  // complete.
  static std::vector<bool> live_states(const RuleDfa& dfa, const std::vector<bool>& productive) {
    const size_t n = dfa.states.size();
    std::vector<std::vector<int32_t>> preds(n);
    for (size_t s = 0; s < n; ++s) {
      for (const TerminalEdge& e : dfa.states[s].terminals)
        preds[e.target].push_back(static_cast<int32_t>(s));
      for (const RuleEdge& e : dfa.states[s].rules) {
        if (productive[e.rule]) preds[e.target].push_back(static_cast<int32_t>(s));
      }
    }
    std::vector<bool> live(n, false);
    std::vector<int32_t> work;
    for (size_t s = 0; s < n; ++s) {
      if (dfa.states[s].final) {
        live[s] = true;
        work.push_back(static_cast<int32_t>(s));
      }
    }
    while (!work.empty()) {
      int32_t s = work.back();
      work.pop_back();
      for (int32_t p : preds[s]) {
        if (!live[p]) {
          live[p] = true;
          work.push_back(p);
        }
      }
    }
    return live;
  }

  Status finish(const std::vector<RuleDfa>& dfas) {
    const size_t n_rules = dfas.size();
    std::vector<bool> productive(n_rules, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n_rules; ++r) {
        if (!productive[r] && live_states(dfas[r], productive)[0]) {
          productive[r] = true;
          changed = true;
        }
      }
    }
    std::string stuck;
    int n_stuck = 0;
    for (size_t r = 0; r < n_rules; ++r) {
      if (!productive[r]) {
        stuck += (n_stuck++ ? ", '" : "'") + fsm_.rule_names_[r] + "'";
      }
    }
    if (n_stuck > 0) {
      return invalid_argument(std::string(n_stuck == 1 ? "grammar rule " : "grammar rules ") + stuck +
                              " can never be completed: every way through needs a rule that is still open "
                              "(unending recursion) or an empty character class");
    }
    // Lay the live states out rule by rule; edges to dead states are dropped.
    fsm_.rule_start_.resize(n_rules);
    for (size_t r = 0; r < n_rules; ++r) {
      const RuleDfa& dfa = dfas[r];
      std::vector<bool> live = live_states(dfa, productive);
      std::vector<int32_t> remap(dfa.states.size(), -1);
      int32_t next_id = static_cast<int32_t>(fsm_.states_.size());
      for (size_t s = 0; s < dfa.states.size(); ++s) {
        if (live[s]) remap[s] = next_id++;
      }
      fsm_.rule_start_[r] = remap[0];
      for (size_t s = 0; s < dfa.states.size(); ++s) {
        if (!live[s]) continue;
        const DfaState& st = dfa.states[s];
        FsmState out;
        out.rule = static_cast<int32_t>(r);
        out.final = st.final;
        out.terminal_begin = static_cast<uint32_t>(fsm_.terminal_edges_.size());
        for (const TerminalEdge& e : st.terminals) {
          if (live[e.target]) fsm_.terminal_edges_.push_back({e.lo, e.hi, remap[e.target]});
        }
        out.terminal_end = static_cast<uint32_t>(fsm_.terminal_edges_.size());
        out.rule_begin = static_cast<uint32_t>(fsm_.rule_edges_.size());
        for (const RuleEdge& e : st.rules) {
          if (live[e.target]) fsm_.rule_edges_.push_back({e.rule, remap[e.target]});
        }
        out.rule_end = static_cast<uint32_t>(fsm_.rule_edges_.size());
        fsm_.states_.push_back(out);
      }
    }
    // Nullable: the start reaches a final state through nullable rules only.
    fsm_.rule_nullable_.assign(n_rules, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n_rules; ++r) {
        if (fsm_.rule_nullable_[r]) continue;
        std::vector<int32_t> work = {fsm_.rule_start_[r]};
        std::vector<int32_t> seen = work;
        bool nullable = false;
        while (!work.empty() && !nullable) {
          int32_t s = work.back();
          work.pop_back();
          if (fsm_.states_[s].final) nullable = true;
          for (const RuleEdge& e : fsm_.rule_edges(s)) {
            if (fsm_.rule_nullable_[e.rule] && std::find(seen.begin(), seen.end(), e.target) == seen.end()) {
              seen.push_back(e.target);
              work.push_back(e.target);
            }
          }
        }
        if (nullable) {
          fsm_.rule_nullable_[r] = true;
          changed = true;
        }
      }
    }
    return Status::ok();
  }

  const Grammar& g_;
  GrammarFsm fsm_;
  std::vector<bool> reachable_;
  std::vector<bool> inline_;
  std::vector<int64_t> cost_;
  std::vector<int32_t> compiled_id_;
  std::unordered_map<std::string, uint32_t> token_index_;
  std::vector<std::vector<NfaEdge>> nfa_;
  int32_t nfa_start_ = -1;
  int32_t nfa_final_ = -1;
  std::vector<uint32_t> mark_;
  uint32_t mark_stamp_ = 1;
  std::vector<int32_t> closure_work_;  // closure()'s stack
};

Result<GrammarFsm> GrammarFsm::compile(const Grammar& grammar) {
  if (grammar.root < 0 || grammar.root >= static_cast<int32_t>(grammar.rules.size())) {
    return invalid_argument("grammar has no start rule");
  }
  return FsmBuilder(grammar).build();
}

int32_t GrammarFsm::next(int32_t s, uint32_t symbol) const {
  std::span<const TerminalEdge> edges = terminal_edges(s);
  // Edges are sorted and disjoint; most states have a handful.
  size_t lo = 0;
  size_t hi = edges.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (edges[mid].hi < symbol) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < edges.size() && edges[lo].lo <= symbol) return edges[lo].target;
  return -1;
}

}  // namespace ladder::grammar
