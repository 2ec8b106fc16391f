#include "harness/verify_policy.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <toml++/toml.h>

#include "harness/workload.h"

namespace ladder::harness {

namespace {

Result<std::optional<double>> read_number(const toml::table& t, const std::string& key, const std::string& where,
                                          double lo, double hi) {
  const toml::node* node = t.get(key);
  double v = 0;
  if (auto i = node->value_exact<int64_t>()) {
    v = static_cast<double>(*i);
  } else if (auto f = node->value_exact<double>()) {
    v = *f;
  } else {
    return invalid_argument(fmt::format("{}: '{}' must be a number", where, key));
  }
  if (!(v >= lo && v <= hi)) return invalid_argument(fmt::format("{}: '{}' = {} is outside [{}, {}]", where, key, v, lo, hi));
  return std::optional<double>(v);
}

Result<QualityThresholds> read_thresholds(const toml::table& t, const std::string& where) {
  QualityThresholds q;
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    constexpr double kHuge = 1e300;
    if (key == "min_match") {
      LADDER_ASSIGN_OR_RETURN(q.min_match, read_number(t, key, where, 0, 1));
    } else if (key == "max_mean_kl") {
      LADDER_ASSIGN_OR_RETURN(q.max_mean_kl, read_number(t, key, where, 0, kHuge));
    } else if (key == "max_kl") {
      LADDER_ASSIGN_OR_RETURN(q.max_kl, read_number(t, key, where, 0, kHuge));
    } else if (key == "min_divergence") {
      if (!node.is_integer()) return invalid_argument(where + ": 'min_divergence' must be an integer (a token position)");
      LADDER_ASSIGN_OR_RETURN(auto v, read_number(t, key, where, 0, 1e12));
      q.min_divergence = static_cast<int64_t>(*v);
    } else {
      return invalid_argument(fmt::format("{}: unknown key '{}' (min_match, min_divergence, max_mean_kl, max_kl)",
                                          where, key));
    }
  }
  return q;
}

}  // namespace

VerifyPolicy VerifyPolicy::built_in() {
  VerifyPolicy p;
  p.defaults.min_match = 0.9;
  p.defaults.max_mean_kl = 0.05;
  p.source = "built-in defaults";
  return p;
}

QualityThresholds overlay(QualityThresholds base, const QualityThresholds& over) {
  if (over.min_match) base.min_match = over.min_match;
  if (over.min_divergence) base.min_divergence = over.min_divergence;
  if (over.max_mean_kl) base.max_mean_kl = over.max_mean_kl;
  if (over.max_kl) base.max_kl = over.max_kl;
  return base;
}

QualityThresholds VerifyPolicy::for_slice(const std::string& slice) const {
  auto it = slices.find(slice);
  return it == slices.end() ? defaults : overlay(defaults, it->second);
}

nlohmann::json VerifyPolicy::to_json() const {
  nlohmann::json j = {{"source", source}, {"default", harness::to_json(defaults)}};
  j["slices"] = nlohmann::json::object();
  for (const auto& [name, t] : slices) j["slices"][name] = harness::to_json(overlay(defaults, t));
  return j;
}

Result<VerifyPolicy> parse_verify_policy(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ": " << e.description() << " at line " << e.source().begin.line;
    return invalid_argument(msg.str());
  }
  VerifyPolicy p = VerifyPolicy::built_in();
  p.source = source;
  for (const auto& [k, node] : doc) {
    const std::string key(k.str());
    if (key == "default") {
      if (!node.is_table()) return invalid_argument(source + ": [default] must be a table");
      LADDER_ASSIGN_OR_RETURN(QualityThresholds d, read_thresholds(*node.as_table(), source + " [default]"));
      p.defaults = overlay(p.defaults, d);
    } else if (key == "slice") {
      if (!node.is_table()) return invalid_argument(source + ": 'slice' must hold [slice.NAME] tables");
      for (const auto& [name, sub] : *node.as_table()) {
        const std::string where = fmt::format("{} [slice.{}]", source, name.str());
        if (!sub.is_table()) return invalid_argument(where + " must be a table");
        LADDER_ASSIGN_OR_RETURN(p.slices[std::string(name.str())], read_thresholds(*sub.as_table(), where));
      }
    } else {
      return invalid_argument(source + ": unknown table or key '" + key + "' (use [default] and [slice.NAME])");
    }
  }
  return p;
}

Result<VerifyPolicy> load_verify_policy(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_verify_policy(text, path);
}

}  // namespace ladder::harness
