#include "harness/server_probe.h"

#include <fmt/format.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace ladder::harness {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::map<std::string, double> parse_prometheus_text(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // "name{labels} value [timestamp]": the value follows the last '}' or the name.
    size_t brace = line.rfind('}');
    size_t sep = line.find(' ', brace == std::string::npos ? 0 : brace);
    if (sep == std::string::npos) continue;
    std::string series = line.substr(0, sep);
    std::string rest = line.substr(sep + 1);
    try {
      size_t used = 0;
      double v = std::stod(rest, &used);
      out[series] = v;
    } catch (const std::exception&) {
      // NaN/Inf spelled differently or garbage: not a number we can plot.
    }
  }
  return out;
}

std::pair<std::string, double> find_queue_depth(const std::map<std::string, double>& samples,
                                                const std::string& prefer) {
  auto base_name = [](const std::string& series) { return series.substr(0, series.find('{')); };
  auto sum_of = [&](const std::string& name) {
    double s = 0;
    for (const auto& [series, v] : samples) {
      if (base_name(series) == name) s += v;
    }
    return s;
  };
  if (!prefer.empty()) return {prefer, sum_of(prefer)};
  // Gauges of waiting requests as servers name them (Ladder, vLLM, SGLang, TGI, llama.cpp).
  static const char* kKnown[] = {"ladder_queue_depth",         "ladder_requests_waiting", "ladder_num_requests_waiting",
                                 "vllm:num_requests_waiting",  "sglang:num_queue_reqs",   "tgi_queue_size",
                                 "llamacpp:requests_deferred"};
  for (const char* k : kKnown) {
    for (const auto& [series, v] : samples) {
      if (base_name(series) == k) return {k, sum_of(k)};
    }
  }
  for (const auto& [series, v] : samples) {
    std::string n = base_name(series);
    if ((n.find("queue") != std::string::npos || n.find("waiting") != std::string::npos) &&
        n.find("_total") == std::string::npos && n.find("_bucket") == std::string::npos &&
        n.find("_sum") == std::string::npos && n.find("_count") == std::string::npos &&
        n.find("seconds") == std::string::npos) {
      return {n, sum_of(n)};
    }
  }
  return {"", 0.0};
}

ServerInfo probe_server(const net::Endpoint& ep, const std::string& api_key, double timeout_s) {
  ServerInfo info;
  net::HttpRequestSpec spec;
  spec.path = "/v1/models";
  spec.api_key = api_key;
  spec.timeout_s = timeout_s;
  auto models = net::http_fetch(ep, spec);
  if (models.is_ok() && models->status == 200) {
    json j = json::parse(models->body, nullptr, false);
    if (!j.is_discarded()) {
      info.models = j;
      if (j.contains("data") && j["data"].is_array() && !j["data"].empty() && j["data"][0].contains("id") &&
          j["data"][0]["id"].is_string()) {
        info.model_id = j["data"][0]["id"].get<std::string>();
      }
    }
  }
  spec.path = "/metrics";
  auto metrics = net::http_fetch(ep, spec);
  if (metrics.is_ok() && metrics->status == 200) {
    info.metrics = parse_prometheus_text(metrics->body);
    info.metrics_available = true;
  }
  return info;
}

Status wait_until_ready(const net::Endpoint& ep, const std::string& api_key, double wait_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  std::string last = "no answer";
  while (true) {
    net::HttpRequestSpec spec;
    spec.path = "/health";
    spec.api_key = api_key;
    spec.timeout_s = 5;
    auto health = net::http_fetch(ep, spec);
    if (health.is_ok() && health->status == 404) {
      spec.path = "/v1/models";
      health = net::http_fetch(ep, spec);
    }
    if (health.is_ok() && health->status == 200) return Status::ok();
    last = health.is_ok() ? spec.path + " answered HTTP " + std::to_string(health->status) : health.status().message();
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return failed_precondition(fmt::format("server at {} not ready after {} s: {}", ep.url(), wait_s, last));
}

std::optional<double> process_cpu_seconds(const std::map<std::string, double>& samples) {
  auto it = samples.find("process_cpu_seconds_total");
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

std::optional<double> shadow_cpu_seconds(const std::map<std::string, double>& samples) {
  auto it = samples.find("ladder_shadow_core_seconds_total");
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

json ServerInfo::model_entry(const std::string& id) const {
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array() || models["data"].empty()) {
    return nullptr;
  }
  for (const json& m : models["data"]) {
    if (m.is_object() && !id.empty() && m.value("id", "") == id) return m;
  }
  return models["data"][0].is_object() ? models["data"][0] : json(nullptr);
}

Result<int64_t> served_context_length(const ServerInfo& info, const std::string& model_id) {
  const json m = info.model_entry(model_id);
  if (m.is_null()) return failed_precondition("the server's /v1/models lists no model");
  for (const auto& ptr : {"/max_model_len"_json_pointer, "/meta/n_ctx_train"_json_pointer}) {
    if (m.contains(ptr) && m[ptr].is_number_integer() && m[ptr].get<int64_t>() > 0) return m[ptr].get<int64_t>();
  }
  return failed_precondition("the server's /v1/models entry for '" + m.value("id", std::string("?")) +
                             "' states no context length (max_model_len); give it with --context");
}

}  // namespace ladder::harness
