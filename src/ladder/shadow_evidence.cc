#include "ladder/shadow_evidence.h"

#include <cmath>
#include <numbers>
#include <nlohmann/json.hpp>

#include "ladder/run_level.h"

namespace ladder::climb {

using nlohmann::json;

namespace {

Result<SliceMargin> margin_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("verify") || !j.contains("margin") || !j["margin"].is_number() ||
      !j["verify"].is_string()) {
    return invalid_argument(where + ": needs \"verify\" (exact or approx) and a numeric \"margin\"");
  }
  SliceMargin m;
  LADDER_ASSIGN_OR_RETURN(m.verify, harness::parse_verify_mode(j["verify"].get<std::string>()));
  m.margin = j["margin"].get<double>();
  if (!(m.margin >= 0 && m.margin <= 1)) return invalid_argument(where + ": margin must be in [0, 1]");
  return m;
}

Result<harness::QualityThresholds> thresholds_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return invalid_argument(where + ": not an object");
  harness::QualityThresholds t;
  auto number = [&](const char* key) -> Result<std::optional<double>> {
    if (!j.contains(key) || j[key].is_null()) return std::optional<double>();
    if (!j[key].is_number()) return invalid_argument(where + "." + key + ": not a number");
    return std::optional<double>(j[key].get<double>());
  };
  LADDER_ASSIGN_OR_RETURN(t.min_match, number("min_match"));
  LADDER_ASSIGN_OR_RETURN(t.max_mean_kl, number("max_mean_kl"));
  LADDER_ASSIGN_OR_RETURN(t.max_kl, number("max_kl"));
  LADDER_ASSIGN_OR_RETURN(std::optional<double> divergence, number("min_divergence"));
  if (divergence) t.min_divergence = static_cast<int64_t>(*divergence);
  return t;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

SliceMargin ShadowRules::margin_for(const std::string& slice) const {
  auto it = slice_margins.find(slice);
  return it != slice_margins.end() ? it->second : default_margin;
}

ShadowRules ShadowRules::from_policy(const ClimbPolicy& policy) {
  ShadowRules r;
  r.default_margin = policy.default_margin;
  r.slice_margins = policy.slice_margins;
  r.thresholds = policy.thresholds;
  r.confidence = policy.confidence;
  return r;
}

Result<ShadowRules> ShadowRules::from_ledger_margin(const json& margin) {
  if (!margin.is_object() || !margin.contains("default")) {
    return invalid_argument("the ledger entry has no \"margin\" object with a \"default\" slice margin");
  }
  ShadowRules r;
  LADDER_ASSIGN_OR_RETURN(r.default_margin, margin_from_json(margin["default"], "margin.default"));
  if (margin.contains("slices") && margin["slices"].is_object()) {
    for (const auto& [name, m] : margin["slices"].items()) {
      LADDER_ASSIGN_OR_RETURN(r.slice_margins[name], margin_from_json(m, "margin.slices." + name));
    }
  }
  if (margin.contains("approx_thresholds") && margin["approx_thresholds"].is_object()) {
    const json& t = margin["approx_thresholds"];
    r.thresholds.source = "the ledger entry";
    if (t.contains("default")) {
      LADDER_ASSIGN_OR_RETURN(r.thresholds.defaults,
                              thresholds_from_json(t["default"], "margin.approx_thresholds.default"));
    }
    if (t.contains("slices") && t["slices"].is_object()) {
      for (const auto& [name, s] : t["slices"].items()) {
        LADDER_ASSIGN_OR_RETURN(r.thresholds.slices[name],
                                thresholds_from_json(s, "margin.approx_thresholds.slices." + name));
      }
    }
  }
  if (margin.contains("confidence") && margin["confidence"].is_number()) {
    r.confidence = margin["confidence"].get<double>();
    if (!(r.confidence > 0 && r.confidence < 1)) return invalid_argument("margin.confidence must be in (0, 1)");
  }
  return r;
}

json to_json(const SliceStanding& s) {
  json failures = json::array();
  for (const auto& f : s.first_failures) failures.push_back({{"request_id", f.request_id}, {"detail", f.detail}});
  return {{"slice", s.slice},
          {"verify", harness::verify_mode_name(s.margin.verify)},
          {"margin", s.margin.margin},
          {"shadowed", s.shadowed},
          {"verified", s.verified},
          {"fraction", s.fraction},
          {"windows", s.windows},
          {"upper", s.upper},
          {"alpha", s.alpha},
          {"looks", s.looks},
          {"below_margin", s.below_margin},
          {"first_failures", failures}};
}

int64_t shadow_look_windows(int j) {
  // 8, 12, 16, 24, 32, 48, ...
  const int64_t base = (j % 2 == 1) ? 8 : 12;
  return base << ((j - 1) / 2);
}

double shadow_look_alpha(double alpha, int j) {
  return alpha * 6.0 / (std::numbers::pi * std::numbers::pi * static_cast<double>(j) * static_cast<double>(j));
}

std::optional<SliceStanding> ShadowEvidence::record(const ShadowOutcome& o) {
  auto [it, fresh] = slices_.try_emplace(o.slice);
  Slice& s = it->second;
  SliceStanding& st = s.standing;
  if (fresh) {
    st.slice = o.slice;
    st.margin = rules_.margin_for(o.slice);
  }
  ++st.shadowed;
  if (o.verified) {
    ++st.verified;
  } else if (st.first_failures.size() < kKeptFailures) {
    st.first_failures.push_back(o);
  }
  st.fraction = static_cast<double>(st.verified) / static_cast<double>(st.shadowed);
  ++s.in_window;
  s.in_window_verified += o.verified ? 1 : 0;
  if (s.in_window < kWindow) return std::nullopt;
  s.window_fractions.push_back(static_cast<double>(s.in_window_verified) / kWindow);
  s.in_window = s.in_window_verified = 0;
  st.windows = static_cast<int64_t>(s.window_fractions.size());
  const bool was_below = st.below_margin;
  look(s);
  if (st.below_margin && !was_below) return st;
  return std::nullopt;
}

void ShadowEvidence::look(Slice& s) const {
  SliceStanding& st = s.standing;
  const int j = st.looks + 1;
  if (st.windows != shadow_look_windows(j)) return;
  st.looks = j;
  st.alpha = shadow_look_alpha((1 - rules_.confidence) / 2, j);
  const auto m = s.window_fractions.size();
  const double mean = mean_of(s.window_fractions);
  const double sd = sd_of(s.window_fractions, mean);
  st.upper = std::min(1.0, mean + t_quantile_upper(st.alpha, static_cast<int>(m) - 1) * sd /
                                      std::sqrt(static_cast<double>(m)));
  if (st.upper < st.margin.margin && static_cast<int64_t>(m) >= min_runs_to_decide(st.alpha)) {
    st.below_margin = true;
  }
}

std::string ShadowEvidence::slice_key(const std::string& slice) const {
  if (slices_.count(slice) > 0 || slices_.size() < kMaxSlices) return slice;
  return "other";
}

std::vector<SliceStanding> ShadowEvidence::standings() const {
  std::vector<SliceStanding> out;
  for (const auto& [name, s] : slices_) out.push_back(s.standing);
  return out;
}

}  // namespace ladder::climb
