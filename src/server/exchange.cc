#include "server/exchange.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>

#include "server/grammar_constraint.h"

namespace ladder::server {

using Clock = std::chrono::steady_clock;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

WriterOptions writer_options(const GenerationPlan& plan) {
  WriterOptions o;
  o.stream = plan.stream;
  o.shape = plan.shape;
  o.n = plan.n;
  o.reasoning = plan.reasoning;
  o.reasoning_starts_inside = plan.reasoning_starts_inside;
  o.tool_format = plan.tool_format;
  // Call ids must not repeat across requests; the response id is random.
  o.tool_id_seed = std::hash<std::string>{}(plan.meta.id);
  // Choice i answers prompt i / n_per_prompt.
  auto of_choice = [&](const auto& per_prompt, int32_t i) {
    return per_prompt[std::min<size_t>(per_prompt.size() - 1, static_cast<size_t>(i / plan.n_per_prompt))];
  };
  for (int32_t i = 0; i < plan.n && !plan.echo.empty(); ++i) o.echo.push_back(of_choice(plan.echo, i));
  for (int32_t i = 0; i < plan.n && !plan.prompt_scores.empty(); ++i) {
    o.prompt_scores.push_back(of_choice(plan.prompt_scores, i));
  }
  o.responses = plan.responses;
  o.echo_logprobs = plan.echo_logprobs;
  o.echo_top_logprobs = plan.request.sampling.top_logprobs;
  o.prompt_logprobs = plan.prompt_logprobs_json ? plan.prompt_logprobs.value_or(0) : -1;
  return o;
}

}  // namespace

Exchange::Exchange(GenerationPlan plan, std::shared_ptr<ResponseChannel> channel, const ExchangeServices& services)
    : plan_(std::move(plan)),
      channel_(std::move(channel)),
      services_(services),
      engine_(services.engine.load()),
      writer_(*services.tokenizer, plan_.meta, writer_options(plan_), channel_),
      ends_(static_cast<size_t>(plan_.n)) {}

std::optional<ApiError> Exchange::submit(int32_t index) {
  engine::Request r = plan_.request;
  if (!plan_.prompts.empty()) r.prompt = plan_.prompts.at(static_cast<size_t>(index / plan_.n_per_prompt));
  if (plan_.grammar) r.constraint = std::make_shared<GrammarConstraint>(plan_.grammar);
  // Seeded choices differ from each other and repeat across runs (the n of
  // each prompt as those of a request with that prompt alone).
  if (r.sampling.seed) *r.sampling.seed += static_cast<uint64_t>(index % plan_.n_per_prompt);
  auto submitted = engine_->submit(std::move(r));
  if (!submitted.is_ok()) return api_error_from_status(submitted.status());
  bool gone = false;
  {
    std::lock_guard lock(mu_);
    engine_ids_.push_back(submitted->id);
    gone = client_gone_;
  }
  if (gone) engine_->cancel(submitted->id);
  std::weak_ptr<Exchange> weak = weak_from_this();
  services_.pump->add(submitted->stream, [weak, index](const engine::StreamEvent& ev) {
    if (auto self = weak.lock()) self->on_event(index, ev);
  });
  return std::nullopt;
}

void Exchange::start() {
  std::weak_ptr<Exchange> weak = weak_from_this();
  channel_->on_end([weak](Delivery how) {
    if (auto self = weak.lock()) self->on_delivery(how);
  });
  if (auto refused = submit(0)) {
    failure_ = *refused;
    writer_.fail(*refused);
    RequestRecord rec;
    rec.tenant = services_.tenants->tenant(plan_.tenant).name;
    rec.http_status = refused->http_status;
    rec.rejected_early = refused->http_status == 429;
    finish_engine(std::move(rec));
  }
}

bool Exchange::submit_rest() {
  rest_submitted_ = true;
  for (int32_t i = 1; i < plan_.n; ++i) {
    if (auto refused = submit(i)) {
      // The choices that did start are cancelled; their ends settle the exchange.
      fail(*refused);
      return false;
    }
  }
  return true;
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
  std::vector<engine::RequestId> cancel;
  {
    std::lock_guard lock(mu_);
    delivery_ = how;
    if (how == Delivery::kClientGone) {
      client_gone_ = true;
      if (!record_) cancel = engine_ids_;
    }
  }
  for (engine::RequestId id : cancel) engine_->cancel(id);
  settle_if_done();
}

void Exchange::fail(const ApiError& error) {
  if (failure_) return;
  failure_ = error;
  writer_.fail(error);
  std::vector<engine::RequestId> ids;
  {
    std::lock_guard lock(mu_);
    ids = engine_ids_;
  }
  // Cancelling a finished request is a no-op.
  for (engine::RequestId id : ids) engine_->cancel(id);
}

void Exchange::on_event(int32_t index, const engine::StreamEvent& ev) {
  if (ev.kind == engine::StreamEvent::Kind::kToken) {
    if (plan_.shadow && index == 0) shadow_tokens_.push_back(ev.token.token);
    writer_.on_token(index, ev);
    if (index == 0 && !rest_submitted_ && plan_.n > 1 && !failure_) submit_rest();
    return;
  }
  // kFinished: the last event of this choice's stream.
  ends_[static_cast<size_t>(index)] = ev;
  const bool finished = ev.finish == engine::FinishReason::kStop || ev.finish == engine::FinishReason::kLength;
  if (finished) {
    writer_.finish_choice(index, ev, ev.finish == engine::FinishReason::kLength ? "length" : "stop");
    if (index == 0 && !rest_submitted_ && plan_.n > 1 && !failure_) submit_rest();
  } else {
    // Cancelled (the client went away, the drain's grace ran out, or another
    // choice failed) or failed.
    fail(ev.finish == engine::FinishReason::kError
             ? api_error_from_status(ev.status.is_ok() ? internal_error("engine error") : ev.status)
             : unavailable("the server shut down before the request finished", "server_draining"));
  }
  size_t submitted = 0;
  {
    std::lock_guard lock(mu_);
    submitted = engine_ids_.size();
  }
  size_t ended = 0;
  for (const auto& e : ends_) ended += e.has_value() ? 1 : 0;
  const bool all_submitted = plan_.n == 1 || rest_submitted_;
  if (ended == submitted && (all_submitted || failure_)) finish_choices();
}

void Exchange::finish_choices() {
  // The request as one: prompt once, every choice's output, the first token
  // of any choice, the last token of all.
  const TenantConfig& tenant = services_.tenants->tenant(plan_.tenant);
  ServerTimings timings;
  timings.tenant = tenant.name;
  RequestRecord rec;
  rec.tenant = tenant.name;
  std::optional<Clock::time_point> first, prefill_start;
  Clock::time_point last = plan_.arrival;
  engine::SpecUsage speculative;  // every choice's, added up
  // Each prompt counts once (its choices share it), the most any of its
  // choices found cached; several prompts add up.
  const size_t n_prompts = std::max<size_t>(1, plan_.prompts.size());
  std::vector<int64_t> prompt_tokens(n_prompts, 0), cached_tokens(n_prompts, 0);
  for (size_t i = 0; i < ends_.size(); ++i) {
    const auto& end = ends_[i];
    if (!end) continue;
    const size_t group = std::min(n_prompts - 1, i / static_cast<size_t>(plan_.n_per_prompt));
    prompt_tokens[group] = end->usage.prompt_tokens;
    cached_tokens[group] = std::max(cached_tokens[group], end->usage.cached_prompt_tokens);
    const engine::SpecUsage& sp = end->usage.speculative;
    speculative.eligible = speculative.eligible || sp.eligible;
    speculative.enabled = speculative.enabled || sp.enabled;
    speculative.proposed += sp.proposed;
    speculative.accepted += sp.accepted;
    speculative.cycles += sp.cycles;
    speculative.draft_us += sp.draft_us;
    speculative.verify_us += sp.verify_us;
    speculative.k = std::max(speculative.k, sp.k);
    const engine::RequestTimings& t = end->timings;
    timings.preemptions += end->n_preemptions;
    rec.completion_tokens += end->usage.completion_tokens;
    if (t.prefill_start && (!prefill_start || *t.prefill_start < *prefill_start)) prefill_start = t.prefill_start;
    if (t.first_token && (!first || *t.first_token < *first)) first = t.first_token;
    Clock::time_point end_time = t.finished.value_or(Clock::now());
    if (!t.token_times.empty()) end_time = t.token_times.back();
    last = std::max(last, end_time);
    for (size_t k = 1; k < t.token_times.size(); ++k) {
      rec.itl_s.push_back(ms_between(t.token_times[k - 1], t.token_times[k]) / 1000.0);
    }
    const int64_t n_tokens = end->usage.completion_tokens;
    if (n_tokens > 1 && t.first_token) {
      // The slowest choice's: the frontend judges the TPOT target by it.
      rec.tpot_s =
          std::max(rec.tpot_s, ms_between(*t.first_token, end_time) / 1000.0 / static_cast<double>(n_tokens - 1));
    }
  }
  for (size_t g = 0; g < n_prompts; ++g) {
    timings.prompt_tokens += prompt_tokens[g];
    timings.cached_tokens += cached_tokens[g];
  }
  if (prefill_start) timings.queued_ms = ms_between(plan_.arrival, *prefill_start);
  if (first) {
    timings.ttft_ms = ms_between(plan_.arrival, *first);
    timings.decode_ms = ms_between(*first, last);
  }
  timings.e2e_ms = ms_between(plan_.arrival, last);
  rec.prompt_tokens = timings.prompt_tokens;
  timings.completion_tokens = rec.completion_tokens;
  rec.cached_tokens = timings.cached_tokens;
  rec.queued_s = timings.queued_ms / 1000.0;
  if (first) rec.ttft_s = timings.ttft_ms / 1000.0;
  rec.e2e_s = timings.e2e_ms / 1000.0;

  if (!failure_) {
    writer_.finish(UsageInfo{timings.prompt_tokens, rec.completion_tokens, timings.cached_tokens, speculative},
                   timings);
    rec.http_status = 200;
    rec.finished = true;
    if (plan_.shadow && services_.on_shadow && ends_[0]) {
      services_.on_shadow(plan_, std::move(shadow_tokens_), ends_[0]->finish);
    }
  } else {
    rec.http_status = failure_->http_status;
    rec.rejected_early = failure_->http_status == 429 && !first;
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
  }
  if (services_.on_settled) services_.on_settled(this, rec);
}

}  // namespace ladder::server
