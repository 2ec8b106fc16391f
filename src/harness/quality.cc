#include "harness/quality.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

const char* verify_mode_name(VerifyMode m) {
  switch (m) {
    case VerifyMode::kNone: return "none";
    case VerifyMode::kExact: return "exact";
    case VerifyMode::kApprox: return "approx";
  }
  return "?";
}

Result<VerifyMode> parse_verify_mode(const std::string& text) {
  if (text == "exact") return VerifyMode::kExact;
  if (text == "approx") return VerifyMode::kApprox;
  return invalid_argument("--verify is exact or approx (got '" + text + "')");
}

namespace {

constexpr double kProbabilityFloor = 1e-10;

// Token text -> probability; a text reported twice (two ids, one spelling) sums.
std::map<std::string, double> probabilities(const TokenLogprob& t) {
  std::map<std::string, double> p;
  for (const auto& [text, lp] : t.top) p[text] += std::exp(lp);
  return p;
}

double mass(const std::map<std::string, double>& p) {
  double s = 0;
  for (const auto& [t, v] : p) s += v;
  return s;
}

// The sequences compared, as strings (ids and bytes alike), and what they are.
struct ComparedUnits {
  std::vector<std::string> values;
  std::string name;
};

ComparedUnits units_of(const OutputView& v, const std::string& by) {
  ComparedUnits u;
  u.name = by;
  if (by == "token ids") {
    for (int64_t id : *v.token_ids) u.values.push_back(std::to_string(id));
  } else if (by == "token texts") {
    for (const auto& lp : *v.logprobs) u.values.push_back(lp.token);
  } else {
    for (char c : *v.text) u.values.emplace_back(1, c);
  }
  return u;
}

bool has_logprobs(const OutputView& v) { return v.logprobs != nullptr && !v.logprobs->empty(); }

}  // namespace

std::optional<double> topk_kl(const TokenLogprob& reference, const TokenLogprob& candidate) {
  if (reference.top.empty() || candidate.top.empty()) return std::nullopt;
  const auto p = probabilities(reference);
  const auto q = probabilities(candidate);
  const double p_other = std::max(0.0, 1.0 - mass(p));
  const double q_tail = std::max(0.0, 1.0 - mass(q));
  double q_min = 1.0;
  for (const auto& [t, v] : q) q_min = std::min(q_min, v);
  int missing = 0;
  for (const auto& [t, v] : p) missing += q.count(t) == 0 ? 1 : 0;
  const double q_missing = std::min(q_min, q_tail / static_cast<double>(missing + 1));

  double kl = 0, q_assigned = 0;
  for (const auto& [t, pt] : p) {
    auto it = q.find(t);
    const double qt = it != q.end() ? it->second : q_missing;
    q_assigned += qt;
    if (pt > 0) kl += pt * std::log(pt / std::max(qt, kProbabilityFloor));
  }
  const double q_other = std::max(0.0, 1.0 - q_assigned);
  if (p_other > 0) kl += p_other * std::log(p_other / std::max(q_other, kProbabilityFloor));
  return std::max(0.0, kl);  // rounding of nearly equal reports must not go negative
}

QualityCheck compare_outputs(VerifyMode mode, const OutputView& ref, const OutputView& cand) {
  QualityCheck q;
  q.mode = mode;
  std::string by = "text bytes";
  if (ref.token_ids != nullptr && cand.token_ids != nullptr) {
    by = "token ids";
  } else if (has_logprobs(ref) && has_logprobs(cand)) {
    by = "token texts";
  }
  const ComparedUnits a = units_of(ref, by);
  const ComparedUnits b = units_of(cand, by);
  q.compared_by = by;
  q.reference_units = static_cast<int64_t>(a.values.size());
  q.candidate_units = static_cast<int64_t>(b.values.size());
  const size_t common = std::min(a.values.size(), b.values.size());
  size_t equal = 0;
  for (size_t i = 0; i < common; ++i) {
    if (a.values[i] == b.values[i]) {
      ++equal;
    } else if (!q.first_divergence) {
      q.first_divergence = static_cast<int64_t>(i);
    }
  }
  if (!q.first_divergence && a.values.size() != b.values.size()) q.first_divergence = static_cast<int64_t>(common);
  q.exact_match = !q.first_divergence;
  const size_t longest = std::max(a.values.size(), b.values.size());
  q.match_fraction = longest == 0 ? 1.0 : static_cast<double>(equal) / static_cast<double>(longest);

  if (has_logprobs(ref) && has_logprobs(cand)) {
    // Positions conditioned on the same prefix. Logprob positions are tokens;
    // a divergence found in text bytes says nothing about token positions,
    // so then every common position counts until the token texts differ.
    size_t last = std::min(ref.logprobs->size(), cand.logprobs->size());
    if (by != "text bytes" && q.first_divergence) last = std::min<size_t>(last, *q.first_divergence + 1);
    double sum = 0, worst = 0;
    for (size_t i = 0; i < last; ++i) {
      auto kl = topk_kl((*ref.logprobs)[i], (*cand.logprobs)[i]);
      if (!kl) continue;
      sum += *kl;
      worst = std::max(worst, *kl);
      ++q.kl_positions;
      if (by == "text bytes" && (*ref.logprobs)[i].token != (*cand.logprobs)[i].token) break;
    }
    if (q.kl_positions > 0) {
      q.kl_mean = sum / static_cast<double>(q.kl_positions);
      q.kl_max = worst;
    }
  }
  return q;
}

void judge(QualityCheck& q, const QualityThresholds& t) {
  std::vector<std::string> failed;
  if (q.task_check && !*q.task_check) failed.push_back("task check failed (expected span missing)");
  if (q.mode == VerifyMode::kExact) {
    if (!q.exact_match) {
      failed.push_back(fmt::format("{} differ from the reference at position {}", q.compared_by,
                                   q.first_divergence.value_or(0)));
    }
  } else {
    if (t.min_match && q.match_fraction < *t.min_match) {
      failed.push_back(fmt::format("match {:.3f} < {}", q.match_fraction, *t.min_match));
    }
    if (t.min_divergence && q.first_divergence && *q.first_divergence < *t.min_divergence) {
      failed.push_back(fmt::format("first divergence at {} < {}", *q.first_divergence, *t.min_divergence));
    }
    for (const auto& [limit, value, name] : {std::tuple{t.max_mean_kl, q.kl_mean, "mean KL"},
                                             std::tuple{t.max_kl, q.kl_max, "max KL"}}) {
      if (!limit) continue;
      if (!value) {
        failed.push_back(fmt::format("{} threshold set but no position has both top-k distributions", name));
      } else if (*value > *limit) {
        failed.push_back(fmt::format("{} {:.4g} > {}", name, *value, *limit));
      }
    }
  }
  q.pass = failed.empty();
  if (q.pass) {
    q.reason = q.exact_match ? fmt::format("identical {}", q.compared_by)
                             : fmt::format("within thresholds (match {:.3f})", q.match_fraction);
  } else {
    q.reason = failed.front();
    for (size_t i = 1; i < failed.size(); ++i) q.reason += "; " + failed[i];
  }
  if (q.compared_by != "token ids") q.reason += " [compared by " + q.compared_by + ": no token ids from the server]";
}

std::string describe(const QualityThresholds& t) {
  std::vector<std::string> parts;
  if (t.min_match) parts.push_back(fmt::format("min_match {}", *t.min_match));
  if (t.min_divergence) parts.push_back(fmt::format("min_divergence {}", *t.min_divergence));
  if (t.max_mean_kl) parts.push_back(fmt::format("max_mean_kl {}", *t.max_mean_kl));
  if (t.max_kl) parts.push_back(fmt::format("max_kl {}", *t.max_kl));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out.empty() ? "none" : out;
}

json to_json(const QualityCheck& q) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  return {{"mode", verify_mode_name(q.mode)},
          {"compared_by", q.compared_by},
          {"exact_match", q.exact_match},
          {"reference_units", q.reference_units},
          {"candidate_units", q.candidate_units},
          {"first_divergence", opt(q.first_divergence)},
          {"match_fraction", q.match_fraction},
          {"kl_mean", opt(q.kl_mean)},
          {"kl_max", opt(q.kl_max)},
          {"kl_positions", q.kl_positions},
          {"task_check", opt(q.task_check)},
          {"history_differs", q.history_differs},
          {"pass", q.pass},
          {"reason", q.reason}};
}

json to_json(const QualityThresholds& t) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  return {{"min_match", opt(t.min_match)},
          {"min_divergence", opt(t.min_divergence)},
          {"max_mean_kl", opt(t.max_mean_kl)},
          {"max_kl", opt(t.max_kl)}};
}

}  // namespace ladder::harness
