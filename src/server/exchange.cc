#include "server/exchange.h"

#include <spdlog/spdlog.h>

namespace ladder::server {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

WriterOptions writer_options(const GenerationPlan& plan) {
  WriterOptions o;
  o.stream = plan.stream;
  o.shape = plan.shape;
  if (plan.reasoning) o.reasoning.emplace(*plan.reasoning, plan.reasoning_starts_inside);
  return o;
}

}  // namespace

Exchange::Exchange(GenerationPlan plan, std::shared_ptr<ResponseChannel> channel, const ExchangeServices& services)
    : plan_(std::move(plan)),
      channel_(std::move(channel)),
      services_(services),
      writer_(*services.tokenizer, plan_.meta, writer_options(plan_), channel_) {}

void Exchange::start() {
  std::weak_ptr<Exchange> weak = weak_from_this();
  channel_->on_end([weak](Delivery how) {
    if (auto self = weak.lock()) self->on_delivery(how);
  });
  auto submitted = services_.engine->submit(plan_.request);
  if (!submitted.is_ok()) {
    const ApiError e = api_error_from_status(submitted.status());
    writer_.fail(e);
    RequestRecord rec;
    rec.tenant = services_.tenants->tenant(plan_.tenant).name;
    rec.http_status = e.http_status;
    rec.rejected_early = e.http_status == 429;
    finish_engine(std::move(rec));
    return;
  }
  bool gone = false;
  {
    std::lock_guard lock(mu_);
    engine_id_ = submitted->id;
    gone = client_gone_;
  }
  if (gone) services_.engine->cancel(submitted->id);
  services_.pump->add(submitted->stream, [weak](const engine::StreamEvent& ev) {
    if (auto self = weak.lock()) self->on_event(ev);
  });
}

void Exchange::abandon() {
  {
    std::lock_guard lock(mu_);
    if (!delivery_) delivery_ = Delivery::kClientGone;
    if (!record_) {
      RequestRecord rec;
      rec.tenant = services_.tenants->tenant(plan_.tenant).name;
      rec.http_status = 503;
      record_ = std::move(rec);
    }
  }
  settle_if_done();
}

void Exchange::on_delivery(Delivery how) {
  std::optional<engine::RequestId> cancel;
  {
    std::lock_guard lock(mu_);
    delivery_ = how;
    if (how == Delivery::kClientGone) {
      client_gone_ = true;
      if (!record_) cancel = engine_id_;
    }
  }
  if (cancel) services_.engine->cancel(*cancel);
  settle_if_done();
}

void Exchange::on_event(const engine::StreamEvent& ev) {
  if (ev.kind == engine::StreamEvent::Kind::kToken) {
    writer_.on_token(ev);
    return;
  }
  // kFinished: the last event of this stream.
  const engine::RequestTimings& t = ev.timings;
  const int64_t n_tokens = ev.usage.completion_tokens;
  ServerTimings timings;
  timings.tenant = services_.tenants->tenant(plan_.tenant).name;
  timings.prompt_tokens = ev.usage.prompt_tokens;
  timings.cached_tokens = ev.usage.cached_prompt_tokens;
  timings.preemptions = ev.n_preemptions;
  Clock::time_point last = t.finished.value_or(Clock::now());
  if (!t.token_times.empty()) last = t.token_times.back();
  if (t.prefill_start) timings.queued_ms = ms_between(plan_.arrival, *t.prefill_start);
  if (t.first_token) {
    timings.ttft_ms = ms_between(plan_.arrival, *t.first_token);
    timings.decode_ms = ms_between(*t.first_token, last);
  }
  timings.e2e_ms = ms_between(plan_.arrival, last);

  RequestRecord rec;
  rec.tenant = timings.tenant;
  rec.prompt_tokens = ev.usage.prompt_tokens;
  rec.completion_tokens = n_tokens;
  rec.cached_tokens = ev.usage.cached_prompt_tokens;
  rec.queued_s = timings.queued_ms / 1000.0;
  if (t.first_token) rec.ttft_s = timings.ttft_ms / 1000.0;
  rec.e2e_s = timings.e2e_ms / 1000.0;
  for (size_t i = 1; i < t.token_times.size(); ++i) {
    rec.itl_s.push_back(ms_between(t.token_times[i - 1], t.token_times[i]) / 1000.0);
  }

  const bool finished = ev.finish == engine::FinishReason::kStop || ev.finish == engine::FinishReason::kLength;
  if (finished) {
    writer_.finish(ev, ev.finish == engine::FinishReason::kLength ? "length" : "stop", timings);
    rec.http_status = 200;
    const TenantConfig& tenant = services_.tenants->tenant(plan_.tenant);
    bool met = t.first_token.has_value();
    if (met && plan_.request.scheduling.deadline != Clock::time_point::max()) {
      met = *t.first_token <= plan_.request.scheduling.deadline;
    }
    if (met && tenant.slo.tpot_ms > 0 && n_tokens > 1) {
      met = timings.decode_ms / static_cast<double>(n_tokens - 1) <= tenant.slo.tpot_ms;
    }
    rec.slo_met = met;
    rec.finished = true;
  } else {
    // Cancelled (the client went away, or the drain's grace ran out) or failed.
    const ApiError e =
        ev.finish == engine::FinishReason::kError
            ? api_error_from_status(ev.status.is_ok() ? internal_error("engine error") : ev.status)
            : unavailable("the server shut down before the request finished", "server_draining");
    writer_.fail(e);
    rec.http_status = e.http_status;
    rec.rejected_early = e.http_status == 429 && !t.first_token;
  }
  finish_engine(std::move(rec));
}

void Exchange::finish_engine(RequestRecord record) {
  {
    std::lock_guard lock(mu_);
    record_ = std::move(record);
  }
  settle_if_done();
}

void Exchange::settle_if_done() {
  RequestRecord rec;
  Delivery how = Delivery::kDelivered;
  {
    std::lock_guard lock(mu_);
    if (settled_ || !record_ || !delivery_) return;
    settled_ = true;
    rec = *record_;
    how = *delivery_;
  }
  if (how == Delivery::kClientGone) {
    // Whatever the engine did, the client did not get the whole response.
    rec.http_status = 499;
    rec.finished = false;
    rec.slo_met = false;
  }
  services_.metrics->record(rec);
  if (services_.on_settled) services_.on_settled(this, plan_, rec);
}

}  // namespace ladder::server
