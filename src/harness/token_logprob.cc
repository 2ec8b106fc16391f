#include "harness/token_logprob.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

namespace {

void sort_top(TokenLogprob& t) {
  std::stable_sort(t.top.begin(), t.top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
}

bool is_text(const json& j) { return j.is_string(); }

}  // namespace

void append_logprobs(const json& lp, std::vector<TokenLogprob>& out) {
  if (!lp.is_object()) return;
  if (auto content = lp.find("content"); content != lp.end() && content->is_array()) {
    for (const json& e : *content) {
      if (!e.is_object() || !is_text(e.value("token", json())) || !e.value("logprob", json()).is_number()) continue;
      TokenLogprob t;
      t.token = e["token"].get<std::string>();
      t.logprob = e["logprob"].get<double>();
      if (auto top = e.find("top_logprobs"); top != e.end() && top->is_array()) {
        for (const json& a : *top) {
          if (a.is_object() && is_text(a.value("token", json())) && a.value("logprob", json()).is_number()) {
            t.top.emplace_back(a["token"].get<std::string>(), a["logprob"].get<double>());
          }
        }
      }
      sort_top(t);
      out.push_back(std::move(t));
    }
    return;
  }
  auto tokens = lp.find("tokens");
  auto token_lps = lp.find("token_logprobs");
  if (tokens == lp.end() || token_lps == lp.end() || !tokens->is_array() || !token_lps->is_array()) return;
  auto tops = lp.find("top_logprobs");
  const bool has_top = tops != lp.end() && tops->is_array();
  for (size_t i = 0; i < tokens->size() && i < token_lps->size(); ++i) {
    if (!(*tokens)[i].is_string() || !(*token_lps)[i].is_number()) continue;
    TokenLogprob t;
    t.token = (*tokens)[i].get<std::string>();
    t.logprob = (*token_lps)[i].get<double>();
    if (has_top && i < tops->size() && (*tops)[i].is_object()) {
      for (const auto& [piece, v] : (*tops)[i].items()) {
        if (v.is_number()) t.top.emplace_back(piece, v.get<double>());
      }
    }
    sort_top(t);
    out.push_back(std::move(t));
  }
}

json logprobs_to_json(const std::vector<TokenLogprob>& positions) {
  json out = json::array();
  for (const auto& p : positions) {
    json top = json::array();
    for (const auto& [text, lp] : p.top) top.push_back(json::array({text, lp}));
    out.push_back({{"token", p.token}, {"logprob", p.logprob}, {"top", std::move(top)}});
  }
  return out;
}

std::vector<TokenLogprob> logprobs_from_json(const json& j) {
  std::vector<TokenLogprob> out;
  if (!j.is_array()) return out;
  for (const json& e : j) {
    if (!e.is_object()) continue;
    TokenLogprob t;
    t.token = e.value("token", std::string());
    t.logprob = e.value("logprob", 0.0);
    if (auto top = e.find("top"); top != e.end() && top->is_array()) {
      for (const json& a : *top) {
        if (a.is_array() && a.size() == 2 && a[0].is_string() && a[1].is_number()) {
          t.top.emplace_back(a[0].get<std::string>(), a[1].get<double>());
        }
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ladder::harness
