#include "harness/quality_summary.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

namespace {

std::vector<QualityGroup> groups_by(const std::vector<RequestResult>& results, const std::string& kind,
                                    const VerifyPolicy* policy) {
  std::map<std::string, QualityGroup> groups;
  std::map<std::string, std::pair<double, size_t>> kl_sums;
  for (const auto& r : results) {
    const std::string& name = kind == "slice" ? r.slice : r.tenant;
    QualityGroup& g = groups[name];
    g.kind = kind;
    g.name = name;
    ++g.requests;
    if (!r.quality) continue;
    const QualityCheck& q = *r.quality;
    ++g.compared;
    g.passed += q.pass ? 1 : 0;
    g.exact += q.exact_match ? 1 : 0;
    g.by_token_ids += q.compared_by == "token ids" ? 1 : 0;
    if (q.task_check) {
      ++g.task_checked;
      g.task_passed += *q.task_check ? 1 : 0;
    }
    g.history_differs += q.history_differs ? 1 : 0;
    g.mean_match += q.match_fraction;
    g.min_match = std::min(g.min_match, q.match_fraction);
    if (q.first_divergence) g.earliest_divergence = std::min(g.earliest_divergence.value_or(*q.first_divergence), *q.first_divergence);
    if (q.kl_mean) {
      kl_sums[name].first += *q.kl_mean;
      ++kl_sums[name].second;
    }
    if (q.kl_max) g.max_kl = std::max(g.max_kl.value_or(0.0), *q.kl_max);
  }
  std::vector<QualityGroup> out;
  for (auto& [name, g] : groups) {
    if (g.compared > 0) g.mean_match /= static_cast<double>(g.compared);
    if (auto it = kl_sums.find(name); it != kl_sums.end()) g.mean_kl = it->second.first / static_cast<double>(it->second.second);
    if (policy != nullptr && kind == "slice") g.thresholds = policy->for_slice(name);
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const QualityGroup& a, const QualityGroup& b) {
    if (a.pass_fraction() != b.pass_fraction()) return a.pass_fraction() < b.pass_fraction();
    if (a.mean_match != b.mean_match) return a.mean_match < b.mean_match;
    return a.mean_kl.value_or(0.0) > b.mean_kl.value_or(0.0);
  });
  return out;
}

}  // namespace

QualityReport summarize_quality(const std::vector<RequestResult>& results, const VerifyPolicy* approx_policy) {
  QualityReport q;
  const bool any = std::any_of(results.begin(), results.end(), [](const RequestResult& r) { return r.quality.has_value(); });
  if (!any) return q;
  q.slices = groups_by(results, "slice", approx_policy);
  q.tenants = groups_by(results, "tenant", approx_policy);
  return q;
}

std::string quality_note(const QualityReport& q) {
  size_t compared = 0, by_ids = 0;
  std::string thresholds;
  for (const auto& g : q.slices) {
    compared += g.compared;
    by_ids += g.by_token_ids;
    if (g.thresholds) thresholds += (thresholds.empty() ? "" : "; ") + g.name + ": " + describe(*g.thresholds);
  }
  std::string note = thresholds.empty() ? "" : "thresholds per slice (KL in nats): " + thresholds;
  if (by_ids != compared) {
    note += (note.empty() ? "" : "\n") + std::to_string(compared - by_ids) + " of " + std::to_string(compared) +
            " compared requests were compared by token texts or text, not token ids (no token ids from the server "
            "or in the reference)";
  }
  return note;
}

json to_json(const QualityGroup& g) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  return {{"kind", g.kind},
          {"name", g.name},
          {"requests", g.requests},
          {"compared", g.compared},
          {"passed", g.passed},
          {"pass_fraction", g.pass_fraction()},
          {"exact", g.exact},
          {"compared_by_token_ids", g.by_token_ids},
          {"task_checked", g.task_checked},
          {"task_passed", g.task_passed},
          {"history_differs", g.history_differs},
          {"mean_match", g.mean_match},
          {"min_match", g.compared > 0 ? json(g.min_match) : json(nullptr)},
          {"earliest_divergence", opt(g.earliest_divergence)},
          {"mean_kl", opt(g.mean_kl)},
          {"max_kl", opt(g.max_kl)},
          {"thresholds", g.thresholds ? to_json(*g.thresholds) : json(nullptr)}};
}

json to_json(const QualityReport& q) {
  json slices = json::array(), tenants = json::array();
  for (const auto& g : q.slices) slices.push_back(to_json(g));
  for (const auto& g : q.tenants) tenants.push_back(to_json(g));
  return {{"order", "worst first"}, {"per_slice", slices}, {"per_tenant", tenants}};
}

}  // namespace ladder::harness
