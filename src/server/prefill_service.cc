#include "server/prefill_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/api_error.h"
#include "server/deadline.h"
#include "server/json_fields.h"
#include "server/openai_response.h"

namespace ladder::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct PrefillArgs {
  std::vector<int32_t> prompt;
  std::string transfer_id;
  std::string host;
  uint16_t port = 0;
  std::optional<double> deadline_ms;
  size_t skip_blocks = 0;  // leading blocks the decode worker already holds
};

std::optional<ApiError> parse_args(const std::string& body, PrefillArgs* out) {
  json doc;
  try {
    if (!parse_json_within_depth(body, &doc)) {
      return invalid_field("", "the body " + nests_too_deep());
    }
  } catch (const json::exception&) {
    return invalid_field("", "the body must be a JSON object");
  }
  if (!doc.is_object()) return invalid_field("", "the body must be a JSON object");
  const json& prompt = doc.value("prompt", json());
  if (!prompt.is_array() || prompt.empty())
    return invalid_field("prompt", "prompt must be a non-empty array of token ids");
  for (const json& t : prompt) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return invalid_field("prompt", "prompt must hold token ids");
    }
    out->prompt.push_back(t.get<int32_t>());
  }
  const json& id = doc.value("transfer_id", json());
  if (!id.is_string() || id.get<std::string>().empty() || id.get<std::string>().size() > 128) {
    return invalid_field("transfer_id", "transfer_id must be a string of 1 to 128 characters");
  }
  out->transfer_id = id.get<std::string>();
  const json& to = doc.value("decode_kv", json());
  const std::string addr = to.is_string() ? to.get<std::string>() : "";
  const size_t colon = addr.rfind(':');
  const int port = colon == std::string::npos ? 0 : std::atoi(addr.c_str() + colon + 1);
  if (colon == std::string::npos || colon == 0 || port <= 0 || port > 65535) {
    return invalid_field("decode_kv", "decode_kv must be HOST:PORT of the decode worker's KV listener");
  }
  out->host = addr.substr(0, colon);
  if (out->host.size() > 2 && out->host.front() == '[' && out->host.back() == ']') {
    out->host = out->host.substr(1, out->host.size() - 2);
  }
  out->port = static_cast<uint16_t>(port);
  if (doc.contains("skip_blocks")) {
    const json& k = doc["skip_blocks"];
    if (!k.is_number_unsigned() || k.get<uint64_t>() > (1u << 24)) {
      return invalid_field("skip_blocks", "skip_blocks must be a non-negative integer");
    }
    out->skip_blocks = static_cast<size_t>(k.get<uint64_t>());
  }
  if (doc.contains("deadline_ms")) {
    const json& d = doc["deadline_ms"];
    if (!d.is_number() || !valid_deadline_ms(d.get<double>())) {
      return invalid_field("deadline_ms", "deadline_ms must be a positive number");
    }
    out->deadline_ms = d.get<double>();
  }
  return std::nullopt;
}

// One request's state between the engine's events and the send.
struct PrefillJob : std::enable_shared_from_this<PrefillJob> {
  const PrefillServices& services;
  std::shared_ptr<ResponseChannel> channel;
  std::function<void()> done;
  PrefillArgs args;
  Clock::time_point arrival;
  std::mutex mu;
  std::optional<engine::RequestId> engine_id;
  bool client_gone = false;
  bool answered = false;
  std::shared_ptr<const kv::KvBlockSet> blocks;
  int64_t cached_tokens = 0;

  PrefillJob(const PrefillServices& s, std::shared_ptr<ResponseChannel> ch, std::function<void()> d, PrefillArgs a)
      : services(s), channel(std::move(ch)), done(std::move(d)), args(std::move(a)), arrival(Clock::now()) {}

  void answer(HttpResponse r) {
    {
      std::lock_guard lock(mu);
      if (answered) return;
      answered = true;
    }
    channel->respond(std::move(r));
    if (done) done();
  }

  void on_event(const engine::StreamEvent& ev) {
    if (ev.kind == engine::StreamEvent::Kind::kToken) {
      if (ev.kv_export) blocks = ev.kv_export;
      return;
    }
    cached_tokens = ev.usage.cached_prompt_tokens;
    if (ev.finish == engine::FinishReason::kError || ev.finish == engine::FinishReason::kCancelled ||
        blocks == nullptr) {
      const Status st = ev.status.is_ok() ? failed_precondition("the prefill was cancelled") : ev.status;
      answer(error_response(api_error_from_status(st)));
      return;
    }
    const double prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - arrival).count();
    auto self = shared_from_this();
    if (!services.senders->post([self, prefill_ms] { self->send(prefill_ms); })) {
      answer(
          error_response(unavailable("too many KV transfers are waiting to be sent", "server_overloaded")));
    }
  }

  void send(double prefill_ms) {
    if (args.skip_blocks > 0) {
      blocks = std::make_shared<const kv::KvBlockSet>(
          kv::drop_leading_blocks(*blocks, std::min(args.skip_blocks, blocks->n_blocks())));
    }
    if (blocks->n_blocks() == 0) {
      HttpResponse r;
      r.body = dump_json({{"blocks", 0},
                          {"bytes", 0},
                          {"cached_tokens", cached_tokens},
                          {"prefill_ms", prefill_ms},
                          {"transfer_ms", 0}});
      answer(std::move(r));
      return;
    }
    auto sent = send_kv_transfer(args.host, args.port, args.transfer_id, *blocks, services.send_timeout,
                                 services.metrics);
    if (!sent.is_ok()) {
      spdlog::warn("prefill {}: {}", args.transfer_id, sent.status().message());
      ApiError e = api_error_from_status(sent.status());
      e.http_status = 502;
      e.code = "kv_transfer_failed";
      answer(error_response(e));
      return;
    }
    HttpResponse r;
    r.body = dump_json({{"blocks", sent->blocks},
                        {"bytes", sent->bytes},
                        {"cached_tokens", cached_tokens},
                        {"prefill_ms", prefill_ms},
                        {"transfer_ms", sent->seconds * 1000}});
    answer(std::move(r));
  }
};

}  // namespace

std::vector<int32_t> prefill_prompt(const std::vector<int32_t>& prompt, int block_size) {
  if (prompt.empty() || block_size < 1) return {};
  const auto full = (static_cast<int64_t>(prompt.size()) - 1) / block_size * block_size;
  if (full == 0) return {};
  return std::vector<int32_t>(prompt.begin(), prompt.begin() + full + 1);
}

void handle_prefill(const PrefillServices& s, const HttpRequest& request, const std::string& api_key,
                    std::shared_ptr<ResponseChannel> channel, std::function<void()> done) {
  auto finish_now = [&](HttpResponse r) {
    channel->respond(std::move(r));
    if (done) done();
  };
  const int tenant = s.tenants->authenticate(api_key);
  if (tenant < 0) return finish_now(error_response(unauthenticated("missing or invalid API key")));
  PrefillArgs args;
  if (auto err = parse_args(request.body, &args)) return finish_now(error_response(*err));
  const TenantConfig& tc = s.tenants->tenant(tenant);

  engine::Request r;
  r.prompt = prefill_prompt(args.prompt, s.engine->config().block_size);
  if (r.prompt.empty()) {
    return finish_now(HttpResponse{
        200,
        "application/json",
        dump_json({{"blocks", 0}, {"bytes", 0}, {"cached_tokens", 0}, {"prefill_ms", 0}, {"transfer_ms", 0}}),
        {}});
  }
  r.sampling.temperature = 0;
  r.stop.max_tokens = 1;
  r.scheduling.priority = tc.priority;
  r.scheduling.tenant = tenant;
  if (args.deadline_ms) {
    r.scheduling.deadline = deadline_after(Clock::now(), *args.deadline_ms);
  }
  r.cache_scope = tc.cache_scope;
  r.export_kv = true;

  auto job = std::make_shared<PrefillJob>(s, channel, std::move(done), std::move(args));
  std::weak_ptr<PrefillJob> weak = job;
  channel->on_end([weak, &s](Delivery how) {
    auto j = weak.lock();
    if (!j || how != Delivery::kClientGone) return;
    std::optional<engine::RequestId> id;
    {
      std::lock_guard lock(j->mu);
      j->client_gone = true;
      id = j->engine_id;
    }
    if (id) s.engine->cancel(*id);
  });
  auto submitted = s.engine->submit(std::move(r));
  if (!submitted.is_ok()) return job->answer(error_response(api_error_from_status(submitted.status())));
  bool gone = false;
  {
    std::lock_guard lock(job->mu);
    job->engine_id = submitted->id;
    gone = job->client_gone;
  }
  if (gone) s.engine->cancel(submitted->id);
  // The pump keeps the job alive until the stream's final event.
  s.pump->add(submitted->stream, [job](const engine::StreamEvent& ev) { job->on_event(ev); });
}

}  // namespace ladder::server
