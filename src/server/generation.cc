// ApiServer's generation half: admission, engine submission, the events of
// each engine stream turned into OpenAI responses, and the release of
// capacity when a request ends (finished, failed, cancelled or gone).
#include <spdlog/spdlog.h>

#include "server/server_state.h"

namespace ladder::server {

namespace {

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

const char* finish_name(engine::FinishReason r) { return r == engine::FinishReason::kLength ? "length" : "stop"; }

}  // namespace

void ApiServer::State::admit(std::shared_ptr<Job> job) {
  AdmissionDecision d;
  {
    std::lock_guard lock(mu);
    AdmissionRequest ar;
    ar.tenant = job->tenant;
    ar.cost_tokens = static_cast<int64_t>(job->prompt.size()) + job->max_tokens;
    ar.deadline = job->deadline;
    d = admission->offer(ar, Clock::now());
    if (d.outcome != AdmissionOutcome::kRejected) {
      job->ticket = d.ticket;
      job->queued = d.outcome == AdmissionOutcome::kQueued;
      jobs[d.ticket] = job;
    }
  }
  if (d.outcome == AdmissionOutcome::kRejected) {
    record_rejection(job->tenant, 429);
    job->channel->respond(error_response(rate_limited(d.reason, d.code, d.retry_after_s)));
    return;
  }
  std::weak_ptr<Job> weak = job;
  job->channel->on_end([this, weak](Delivery how) {
    if (how != Delivery::kClientGone) return;
    if (auto j = weak.lock()) on_disconnect(j);
  });
  if (d.outcome == AdmissionOutcome::kAdmitted) submit(std::move(job));
}

void ApiServer::State::submit(std::shared_ptr<Job> job) {
  const TenantConfig& tenant = tenants.tenant(job->tenant);
  engine::Request r;
  r.prompt = job->prompt;
  r.sampling = job->options.sampling;
  r.stop.max_tokens = job->max_tokens;
  if (!job->options.ignore_eos) {
    for (int32_t id : tok->end_of_generation_ids()) r.stop.stop_token_ids.insert(id);
  }
  r.scheduling.priority = tenant.priority;
  if (job->deadline) r.scheduling.deadline = *job->deadline;
  r.cache_scope = tenant.cache_scope;
  auto sub = engine->submit(std::move(r));
  if (!sub.is_ok()) {
    ApiError e = api_error_from_status(sub.status());
    if (e.http_status == 400) e.param = "prompt";
    record_rejection(job->tenant, e.http_status);
    job->channel->respond(error_response(e));
    release(job, 0);
    return;
  }
  bool gone = false;
  {
    std::lock_guard lock(mu);
    job->engine_id = sub->id;
    job->submitted = true;
    gone = job->client_gone.load();
  }
  if (gone) engine->cancel(sub->id);
  pump->add(sub->stream, [this, job](const engine::StreamEvent& ev) { on_event(job, ev); });
}

void ApiServer::State::on_disconnect(const std::shared_ptr<Job>& job) {
  job->client_gone = true;
  engine::RequestId cancel_id = 0;
  {
    std::lock_guard lock(mu);
    if (job->done) return;
    if (job->queued) {
      admission->withdraw(job->ticket);
      jobs.erase(job->ticket);
      job->done = true;
    } else if (job->submitted) {
      cancel_id = job->engine_id;
    }
  }
  if (job->done) {
    record_rejection(job->tenant, 499);
    return;
  }
  if (cancel_id != 0) engine->cancel(cancel_id);
}

namespace {

// Sends the SSE headers (and the chat role chunk) once, before the first data.
void ensure_stream_started(Job& job, bool* started) {
  if (*started) return;
  *started = true;
  job.channel->start_stream(200, "text/event-stream", {{"X-Request-Id", job.meta.id}});
  if (job.kind == ApiKind::kChat) job.channel->send(sse_data(chat_role_chunk(job.meta, job.options.include_usage)));
}

void emit(Job& job, const TextDelta& delta, bool* started) {
  if (job.options.stream) {
    if (delta.text.empty() && delta.logprobs.empty()) return;
    ensure_stream_started(job, started);
    job.channel->send(sse_data(delta_chunk(job.meta, delta, job.options.logprobs, job.text_offset,
                                           job.options.include_usage)));
  } else {
    job.full_text += delta.text;
    for (const auto& e : delta.logprobs) job.logprobs.push_back(e);
  }
  job.text_offset += delta.text.size();
}

}  // namespace

void ApiServer::State::on_event(const std::shared_ptr<Job>& job, const engine::StreamEvent& ev) {
  Job& j = *job;
  if (ev.kind == engine::StreamEvent::Kind::kToken) {
    if (j.client_gone || j.text->stopped()) return;
    TextDelta delta = j.text->push(ev.token);
    if (delta.stopped) engine->cancel(j.engine_id);
    emit(j, delta, &j.stream_started);
    return;
  }

  // kFinished: the last event of this stream.
  const int64_t n_tokens = j.text->n_tokens();
  const engine::RequestTimings& t = ev.timings;
  ServerTimings timings;
  timings.tenant = tenants.tenant(j.tenant).name;
  timings.prompt_tokens = ev.usage.prompt_tokens;
  timings.cached_tokens = ev.usage.cached_prompt_tokens;
  timings.preemptions = ev.n_preemptions;
  Clock::time_point last = t.finished.value_or(Clock::now());
  if (n_tokens > 0 && static_cast<size_t>(n_tokens) <= t.token_times.size()) {
    last = t.token_times[static_cast<size_t>(n_tokens - 1)];
  }
  if (t.prefill_start) timings.queued_ms = ms(j.arrival, *t.prefill_start);
  if (t.first_token) {
    timings.ttft_ms = ms(j.arrival, *t.first_token);
    timings.decode_ms = ms(*t.first_token, last);
  }
  timings.e2e_ms = ms(j.arrival, last);

  RequestRecord rec;
  rec.tenant = timings.tenant;
  rec.prompt_tokens = ev.usage.prompt_tokens;
  rec.completion_tokens = n_tokens;
  rec.cached_tokens = ev.usage.cached_prompt_tokens;
  rec.queued_s = timings.queued_ms / 1000.0;
  if (t.first_token) rec.ttft_s = timings.ttft_ms / 1000.0;
  rec.e2e_s = timings.e2e_ms / 1000.0;
  for (int64_t i = 1; i < n_tokens && static_cast<size_t>(i) < t.token_times.size(); ++i) {
    rec.itl_s.push_back(ms(t.token_times[static_cast<size_t>(i - 1)], t.token_times[static_cast<size_t>(i)]) / 1000.0);
  }

  bool stopped_by_string = j.text->stopped();
  if (j.client_gone) {
    rec.http_status = 499;
  } else if (ev.finish == engine::FinishReason::kError ||
             (ev.finish == engine::FinishReason::kCancelled && !stopped_by_string)) {
    // The engine failed it, or the drain's grace period ran out.
    ApiError e = ev.finish == engine::FinishReason::kError
                     ? api_error_from_status(ev.status.is_ok() ? internal_error("engine error") : ev.status)
                     : unavailable("the server shut down before the request finished", "server_draining");
    rec.http_status = e.http_status;
    if (j.stream_started) {
      j.channel->send(sse_data(nlohmann::json::parse(e.body())));
      j.channel->send(kSseDone);
      j.channel->finish();
    } else {
      j.channel->respond(error_response(e));
    }
  } else {
    emit(j, j.text->finish(), &j.stream_started);
    std::string reason = j.text->stopped() ? "stop" : finish_name(ev.finish);
    UsageInfo usage{ev.usage.prompt_tokens, n_tokens, ev.usage.cached_prompt_tokens};
    if (j.options.stream) {
      ensure_stream_started(j, &j.stream_started);
      j.channel->send(sse_data(final_chunk(j.meta, reason, timings, j.options.include_usage)));
      if (j.options.include_usage) j.channel->send(sse_data(usage_chunk(j.meta, usage)));
      j.channel->send(kSseDone);
      j.channel->finish();
    } else {
      HttpResponse r;
      r.body = dump_json(full_response(j.meta, j.full_text, reason, j.options.logprobs ? &j.logprobs : nullptr, usage,
                                       timings));
      j.channel->respond(std::move(r));
    }
    rec.http_status = 200;
    rec.verified = true;
    const TenantConfig& tenant = tenants.tenant(j.tenant);
    bool met = t.first_token.has_value();
    if (met && j.deadline) met = *t.first_token <= *j.deadline;
    if (met && tenant.slo.tpot_ms > 0 && n_tokens > 1) {
      met = timings.decode_ms / static_cast<double>(n_tokens - 1) <= tenant.slo.tpot_ms;
    }
    rec.slo_met = met;
  }
  metrics.record(rec);
  release(job, n_tokens);
}

void ApiServer::State::release(const std::shared_ptr<Job>& job, int64_t tokens) {
  std::vector<std::shared_ptr<Job>> next;
  {
    std::lock_guard lock(mu);
    if (job->done) return;
    job->done = true;
    jobs.erase(job->ticket);
    if (job->queued) {
      admission->withdraw(job->ticket);
    } else {
      for (uint64_t id : admission->finish(job->ticket, tokens, Clock::now())) {
        auto it = jobs.find(id);
        if (it == jobs.end()) continue;
        it->second->queued = false;
        next.push_back(it->second);
      }
    }
  }
  for (auto& j : next) submit(std::move(j));
}

void ApiServer::State::expire_queued() {
  if (!admission) return;
  std::vector<std::shared_ptr<Job>> expired;
  {
    std::lock_guard lock(mu);
    for (uint64_t id : admission->expire(Clock::now())) {
      auto it = jobs.find(id);
      if (it == jobs.end()) continue;
      it->second->done = true;
      expired.push_back(it->second);
      jobs.erase(it);
    }
  }
  for (auto& j : expired) {
    record_rejection(j->tenant, 429);
    j->channel->respond(error_response(
        rate_limited("the deadline passed while the request waited in the queue", "deadline_exceeded", 1)));
  }
}

void ApiServer::State::check_drain() {
  if (state.load() != ServerState::kDraining) return;
  std::vector<std::shared_ptr<Job>> queued_jobs;
  std::vector<engine::RequestId> running;
  bool empty = false;
  bool overdue = false;
  {
    std::lock_guard lock(mu);
    empty = jobs.empty();
    double elapsed_s = std::chrono::duration<double>(Clock::now() - drain_started).count();
    overdue = elapsed_s > config.drain_grace_s;
    if (overdue && !empty) {
      for (auto it = jobs.begin(); it != jobs.end();) {
        if (it->second->queued) {
          admission->withdraw(it->first);
          it->second->done = true;
          queued_jobs.push_back(it->second);
          it = jobs.erase(it);
        } else {
          if (it->second->submitted) running.push_back(it->second->engine_id);
          ++it;
        }
      }
    }
    // Requests that ignore cancellation must not hold the process forever.
    if (elapsed_s > config.drain_grace_s + 10) empty = true;
  }
  for (auto& j : queued_jobs) {
    record_rejection(j->tenant, 503);
    j->channel->respond(error_response(unavailable("the server shut down before the request ran", "server_draining")));
  }
  for (auto id : running) engine->cancel(id);
  if (empty) stop_all();
}

void ApiServer::State::stop_all() {
  if (state.exchange(ServerState::kStopped) == ServerState::kStopped) return;
  spdlog::info("drained; stopping");
  std::lock_guard lock(done_mu);
  finished = true;
  done_cv.notify_all();
}

}  // namespace ladder::server
