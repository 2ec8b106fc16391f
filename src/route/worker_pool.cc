#include "route/worker_pool.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace ladder::route {

const char* worker_role_name(WorkerRole role) {
  return role == WorkerRole::kPrefill ? "prefill" : "decode";
}

size_t PrefixIndex::leading_hits(std::span<const kv::BlockKey> keys) const {
  size_t n = 0;
  while (n < keys.size() && map_.count(keys[n]) != 0) ++n;
  return n;
}

void PrefixIndex::insert(std::span<const kv::BlockKey> keys) {
  for (const kv::BlockKey& k : keys) {
    auto it = map_.find(k);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      continue;
    }
    lru_.push_front(k);
    map_.emplace(k, lru_.begin());
    if (map_.size() > capacity_) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
  }
}

Result<std::unique_ptr<WorkerPool>> WorkerPool::create(const std::vector<std::string>& prefill_urls,
                                                       const std::vector<std::string>& decode_urls,
                                                       size_t index_capacity) {
  if (decode_urls.empty()) return invalid_argument("ladder route needs at least one --decode worker");
  std::unique_ptr<WorkerPool> pool(new WorkerPool());
  for (WorkerRole role : {WorkerRole::kPrefill, WorkerRole::kDecode}) {
    for (const std::string& url : role == WorkerRole::kPrefill ? prefill_urls : decode_urls) {
      auto ep = net::parse_endpoint(url);
      if (!ep.is_ok()) {
        return invalid_argument(
            fmt::format("--{} {}: {}", worker_role_name(role), url, ep.status().message()));
      }
      Worker w{WorkerInfo{}, *ep, PrefixIndex(index_capacity)};
      w.info.url = url;
      w.info.role = role;
      w.info.status = "not asked yet";
      pool->of(role).push_back(std::move(w));
    }
  }
  return pool;
}

void WorkerPool::probe(double timeout_s) {
  std::vector<std::pair<WorkerRole, net::Endpoint>> targets;
  {
    std::lock_guard lock(mu_);
    for (WorkerRole role : {WorkerRole::kPrefill, WorkerRole::kDecode}) {
      for (const Worker& w : of(role)) targets.emplace_back(role, w.endpoint);
    }
  }
  // Asked outside the lock: a slow worker must not stall placement.
  std::vector<WorkerInfo> seen;
  for (const auto& [role, ep] : targets) {
    WorkerInfo info;
    net::HttpRequestSpec spec;
    spec.path = "/health";
    spec.timeout_s = timeout_s;
    auto r = net::http_fetch(ep, spec);
    if (!r.is_ok()) {
      info.status = r.status().message();
    } else {
      auto doc = nlohmann::json::parse(r->body, nullptr, false);
      info.status = doc.is_object() ? doc.value("status", "unknown") : "unreadable /health";
      const std::string expected_role = worker_role_name(role);
      if (r->status == 200 && doc.is_object() && doc.value("role", "") != expected_role) {
        info.status =
            fmt::format("serves role '{}', listed as a {} worker", doc.value("role", "?"), expected_role);
      } else if (r->status == 200 && doc.is_object()) {
        info.healthy = true;
        info.model_digest = doc.value("model_digest", "");
        info.tokenizer_digest = doc.value("tokenizer_digest", "");
        info.kv_format = doc.value("kv_format", "");
        info.block_size = doc.value("kv_block_size", 0);
        info.max_running = doc.value("max_running", 0);
        info.prefill_chunk_tokens = doc.value("prefill_chunk_tokens", int64_t{0});
        info.max_input_tokens = doc.value("max_input_tokens", int64_t{0});
        info.context_length = doc.value("context_length", int64_t{0});
        info.tool_preamble = doc.value("tool_preamble", true);
        info.chat_template_digest = doc.value("chat_template_digest", "");
        info.kernels = doc.value("kernels", "");
        info.kv_port = static_cast<uint16_t>(doc.value("kv_port", 0));
        info.kv_blocks_used = doc.value("kv_blocks_used", int64_t{0});
      }
    }
    seen.push_back(std::move(info));
  }
  std::lock_guard lock(mu_);
  size_t i = 0;
  for (WorkerRole role : {WorkerRole::kPrefill, WorkerRole::kDecode}) {
    for (Worker& w : of(role)) {
      WorkerInfo& in = seen[i++];
      if (in.healthy != w.info.healthy) {
        spdlog::info("{} worker {} is {}", worker_role_name(role), w.info.url,
                     in.healthy ? "ready" : "unavailable: " + in.status);
      }
      w.info.healthy = in.healthy;
      w.info.status = in.status;
      if (in.healthy) {
        w.info.ever_ready = true;
        w.info.model_digest = in.model_digest;
        w.info.tokenizer_digest = in.tokenizer_digest;
        w.info.kv_format = in.kv_format;
        w.info.block_size = in.block_size;
        w.info.max_running = in.max_running;
        w.info.prefill_chunk_tokens = in.prefill_chunk_tokens;
        w.info.max_input_tokens = in.max_input_tokens;
        w.info.context_length = in.context_length;
        w.info.tool_preamble = in.tool_preamble;
        w.info.chat_template_digest = in.chat_template_digest;
        w.info.kernels = in.kernels;
        w.info.kv_port = in.kv_port;
        w.info.kv_blocks_used = in.kv_blocks_used;
      }
    }
  }
}

Status WorkerPool::check_ready() const {
  std::lock_guard lock(mu_);
  const WorkerInfo* first = nullptr;
  for (const auto* list : {&prefill_, &decode_}) {
    for (const Worker& w : *list) {
      if (!w.info.ever_ready) {
        return failed_precondition(fmt::format("{} worker {} is not ready: {}", worker_role_name(w.info.role),
                                               w.info.url, w.info.status));
      }
      if (first == nullptr) {
        first = &w.info;
        continue;
      }
      if (w.info.model_digest != first->model_digest || w.info.tokenizer_digest != first->tokenizer_digest ||
          w.info.kv_format != first->kv_format || w.info.block_size != first->block_size) {
        return failed_precondition(
            fmt::format("workers disagree: {} serves model {} tokenizer {} KV {} (block {}), {} serves model "
                        "{} tokenizer {} KV "
                        "{} (block {}); every worker must serve the same model with the same KV format",
                        first->url, first->model_digest.substr(0, 12), first->tokenizer_digest.substr(0, 12),
                        first->kv_format, first->block_size, w.info.url, w.info.model_digest.substr(0, 12),
                        w.info.tokenizer_digest.substr(0, 12), w.info.kv_format, w.info.block_size));
      }
      if (w.info.role == WorkerRole::kDecode && w.info.kv_port == 0) {
        return failed_precondition(fmt::format("decode worker {} reports no KV port", w.info.url));
      }
    }
  }
  return Status::ok();
}

std::optional<Placement> WorkerPool::place(WorkerRole role, std::span<const kv::BlockKey> keys) {
  std::lock_guard lock(mu_);
  std::vector<Worker>& list = of(role);
  std::optional<size_t> best;
  size_t best_hits = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const Worker& w = list[i];
    if (!w.info.healthy) continue;
    const size_t hits = w.index.leading_hits(keys);
    if (!best) {
      best = i;
      best_hits = hits;
      continue;
    }
    const Worker& b = list[*best];
    const bool better =
        role == WorkerRole::kPrefill
            ? (hits != best_hits ? hits > best_hits : w.info.in_flight < b.info.in_flight)
            : (w.info.in_flight != b.info.in_flight ? w.info.in_flight < b.info.in_flight : hits > best_hits);
    if (better) {
      best = i;
      best_hits = hits;
    }
  }
  if (!best) return std::nullopt;
  Worker& w = list[*best];
  Placement p;
  p.others_in_flight = w.info.in_flight;
  p.prefill_chunk_tokens = w.info.prefill_chunk_tokens;
  ++w.info.in_flight;
  p.index = *best;
  p.role = role;
  p.affinity_blocks = best_hits;
  p.endpoint = w.endpoint;
  if (role == WorkerRole::kDecode) p.kv_address = fmt::format("{}:{}", w.endpoint.host, w.info.kv_port);
  return p;
}

WorkerPool::PrefillAvailability WorkerPool::prefill_availability(std::span<const kv::BlockKey> keys) const {
  std::lock_guard lock(mu_);
  PrefillAvailability a;
  for (const Worker& w : prefill_) {
    if (!w.info.healthy) continue;
    a.least_in_flight = a.any ? std::min(a.least_in_flight, w.info.in_flight) : w.info.in_flight;
    a.any = true;
    a.most_held_blocks = std::max(a.most_held_blocks, w.index.leading_hits(keys));
  }
  return a;
}

void WorkerPool::release(const Placement& p) {
  std::lock_guard lock(mu_);
  --of(p.role).at(p.index).info.in_flight;
}

void WorkerPool::record_blocks(const Placement& p, std::span<const kv::BlockKey> keys) {
  std::lock_guard lock(mu_);
  of(p.role).at(p.index).index.insert(keys);
}

void WorkerPool::mark_failed(const Placement& p, const std::string& why) {
  std::lock_guard lock(mu_);
  WorkerInfo& info = of(p.role).at(p.index).info;
  if (info.healthy) spdlog::warn("{} worker {} failed: {}", worker_role_name(p.role), info.url, why);
  info.healthy = false;
  info.status = why;
}

std::vector<WorkerInfo> WorkerPool::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<WorkerInfo> out;
  for (const auto* list : {&prefill_, &decode_}) {
    for (const Worker& w : *list) out.push_back(w.info);
  }
  return out;
}

std::string WorkerPool::model_digest() const {
  std::lock_guard lock(mu_);
  return decode_.front().info.model_digest;
}
std::string WorkerPool::tokenizer_digest() const {
  std::lock_guard lock(mu_);
  return decode_.front().info.tokenizer_digest;
}
std::string WorkerPool::kv_format() const {
  std::lock_guard lock(mu_);
  return decode_.front().info.kv_format;
}
int WorkerPool::block_size() const {
  std::lock_guard lock(mu_);
  return decode_.front().info.block_size;
}
int64_t WorkerPool::smallest_decode(int64_t WorkerInfo::*field) const {
  std::lock_guard lock(mu_);
  int64_t n = INT64_MAX;
  for (const Worker& w : decode_) n = std::min(n, w.info.*field);
  return n;
}

int64_t WorkerPool::context_length() const { return smallest_decode(&WorkerInfo::context_length); }
int64_t WorkerPool::max_input_tokens() const { return smallest_decode(&WorkerInfo::max_input_tokens); }

bool WorkerPool::tool_preamble() const {
  std::lock_guard lock(mu_);
  bool on = true;
  for (const Worker& w : decode_) on = on && w.info.tool_preamble;
  return on;
}

std::string WorkerPool::chat_template_digest() const {
  std::lock_guard lock(mu_);
  std::string digest;
  for (const Worker& w : decode_) {
    if (!digest.empty() && w.info.chat_template_digest != digest) return "";
    digest = w.info.chat_template_digest;
  }
  return digest;
}

std::optional<std::string> WorkerPool::kernels() const {
  std::lock_guard lock(mu_);
  std::optional<std::string> common;
  for (const auto* list : {&prefill_, &decode_}) {
    for (const Worker& w : *list) {
      if (common && *common != w.info.kernels) return std::nullopt;
      common = w.info.kernels;
    }
  }
  return common;
}

int WorkerPool::total_decode_slots() const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const Worker& w : decode_) n += w.info.max_running;
  return n;
}

}  // namespace ladder::route
