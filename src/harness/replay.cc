#include "harness/replay.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "harness/reference.h"
#include "harness/sse_stream.h"

namespace ladder::harness {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Clock::time_point at_offset(Clock::time_point t0, double seconds) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// Bounds requests in flight; limit 0 admits everything at once.
class CapSemaphore {
 public:
  explicit CapSemaphore(int limit) : limit_(limit) {}
  void acquire() {
    if (limit_ <= 0) return;
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return used_ < limit_; });
    ++used_;
  }
  void release() {
    if (limit_ <= 0) return;
    {
      std::lock_guard lock(mu_);
      --used_;
    }
    cv_.notify_one();
  }

 private:
  int limit_;
  int used_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

struct Progress {
  std::atomic<int> sent{0};
  std::atomic<int> finished{0};
  std::atomic<int> good{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> failed{0};
};

Slo merged_slo(const Slo& base, const Slo& over) {
  Slo s = base;
  if (over.ttft_ms) s.ttft_ms = over.ttft_ms;
  if (over.tpot_ms) s.tpot_ms = over.tpot_ms;
  if (over.e2e_ms) s.e2e_ms = over.e2e_ms;
  return s;
}

// An OpenAI-style error body -> (message, code); other bodies -> their start.
std::pair<std::string, std::string> error_from_body(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    std::string code = e.is_object() && e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "";
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return {e["message"].get<std::string>(), code};
    return {e.dump(), code};
  }
  return {body.substr(0, 300), ""};
}

std::string sent_prompt_digest(const std::vector<ChatMessage>& messages, const std::string& prompt, bool chat) {
  if (!chat) return sha256_hex(prompt);
  json msgs = json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  return sha256_hex(msgs.dump());
}

// Runs one arrival unit (an independent request, or a session's turns in order).
class UnitRunner {
 public:
  UnitRunner(const std::vector<WorkloadRequest>& reqs, const std::vector<std::string>& keys,
             std::vector<RequestResult>& results, const ReplayOptions& opts, const std::string& model,
             Clock::time_point t0, CapSemaphore& cap, Progress& progress)
      : reqs_(reqs), keys_(keys), results_(results), opts_(opts), model_(model), t0_(t0), cap_(cap),
        progress_(progress) {}

  void run(const std::vector<size_t>& turns) {
    std::vector<ChatMessage> history;
    std::string prompt_history;
    Clock::time_point scheduled = at_offset(t0_, reqs_[turns.front()].t);
    for (size_t k = 0; k < turns.size(); ++k) {
      const WorkloadRequest& w = reqs_[turns[k]];
      if (k > 0) scheduled += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(w.think_s));
      std::this_thread::sleep_until(scheduled);
      std::vector<ChatMessage> messages;
      std::string prompt;
      if (w.is_chat()) {
        messages = history;
        messages.insert(messages.end(), w.messages.begin(), w.messages.end());
      } else {
        prompt = prompt_history + w.prompt;
      }
      RequestResult& r = results_[turns[k]];
      send(w, turns[k], messages, prompt, scheduled, r);
      if (w.is_chat()) {
        history = std::move(messages);
        history.push_back({"assistant", r.text});
      } else {
        prompt_history = prompt + r.text;
      }
      scheduled = at_offset(t0_, r.sent_s + r.e2e_ms / 1000.0);
    }
  }

 private:
  void send(const WorkloadRequest& w, size_t index, const std::vector<ChatMessage>& messages,
            const std::string& prompt, Clock::time_point scheduled, RequestResult& r) {
    r.index = index;
    r.source_line = w.source_line;
    r.tenant = w.tenant;
    r.slice = w.slice;
    r.session = w.session;
    r.turn = w.turn;
    r.slo = merged_slo(w.slo, opts_.slo_override);
    r.key = keys_[index];
    r.prompt_sha256 = sent_prompt_digest(messages, prompt, w.is_chat());
    auto before_cap = Clock::now();
    cap_.acquire();
    const auto sent = Clock::now();
    r.cap_wait_ms = ms_between(before_cap, sent);
    r.scheduled_s = ms_between(t0_, scheduled) / 1000.0;
    r.sent_s = ms_between(t0_, sent) / 1000.0;
    r.send_lag_ms = std::max(0.0, ms_between(scheduled, sent));
    for (const auto& m : messages) r.prompt_chars += m.content.size();
    r.prompt_chars += prompt.size();

    net::HttpRequestSpec spec;
    spec.method = "POST";
    spec.path = w.is_chat() ? "/v1/chat/completions" : "/v1/completions";
    auto key = opts_.tenant_keys.find(w.tenant);
    spec.api_key = key != opts_.tenant_keys.end() ? key->second : opts_.api_key;
    BodyOptions extras{opts_.ignore_eos, opts_.token_ids, opts_.top_logprobs};
    spec.body = build_request_body(w, messages, prompt, model_, extras).dump();
    spec.timeout_s = opts_.timeout_s;
    if (opts_.send_deadlines) r.deadline_ms = deadline_ms_of(r.slo);
    if (r.deadline_ms) spec.headers.emplace_back("x-ladder-deadline-ms", fmt::format("{}", *r.deadline_ms));
    // The slice, for a Ladder server's shadow verification (other servers
    // ignore the header); a name the header cannot carry is not sent.
    if (is_header_slice_name(r.slice)) spec.headers.emplace_back("x-ladder-slice", r.slice);

    progress_.sent.fetch_add(1);
    progress_.in_flight.fetch_add(1);
    StreamAccumulator acc(r);
    SseParser parser;
    std::vector<std::string> events;
    bool is_sse = false;
    std::string body;
    Status st = net::http_stream(
        opts_.endpoint, spec,
        [&](int status, std::string_view content_type) {
          r.http_status = status;
          is_sse = status == 200 && content_type.rfind("text/event-stream", 0) == 0;
        },
        [&](std::string_view bytes) {
          const double t = ms_between(sent, Clock::now());
          if (!is_sse) {
            body.append(bytes);
            return;
          }
          events.clear();
          parser.feed(bytes, events);
          for (const auto& e : events) acc.on_event(e, t);
        });
    const double end_ms = ms_between(sent, Clock::now());
    progress_.in_flight.fetch_sub(1);
    cap_.release();
    if (!st.is_ok()) {
      r.error = st.message();
    } else if (r.http_status != 200) {
      std::tie(r.error, r.error_code) = error_from_body(body);
    } else if (!is_sse) {
      acc.on_whole_body(body, end_ms);
    } else if (r.finish_reason.empty() && r.error.empty()) {
      r.error = acc.saw_done() ? "stream finished without a finish_reason" : "stream ended early";
    }
    acc.finish(end_ms);
    if (opts_.verifier != nullptr) {
      opts_.verifier->verify(r, w);
    } else {
      verify_result(r, w.expect);
    }
    progress_.finished.fetch_add(1);
    if (is_good(r)) progress_.good.fetch_add(1);
    if (!r.verified) progress_.failed.fetch_add(1);
  }

  const std::vector<WorkloadRequest>& reqs_;
  const std::vector<std::string>& keys_;
  std::vector<RequestResult>& results_;
  const ReplayOptions& opts_;
  const std::string& model_;
  Clock::time_point t0_;
  CapSemaphore& cap_;
  Progress& progress_;
};

std::vector<std::vector<size_t>> arrival_units(const std::vector<WorkloadRequest>& reqs) {
  std::vector<std::vector<size_t>> units;
  std::map<std::pair<std::string, std::string>, size_t> sessions;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].session.empty()) {
      units.push_back({i});
      continue;
    }
    auto key = std::make_pair(reqs[i].tenant, reqs[i].session);
    auto it = sessions.find(key);
    if (it == sessions.end()) {
      sessions[key] = units.size();
      units.push_back({i});
    } else {
      units[it->second].push_back(i);
    }
  }
  std::stable_sort(units.begin(), units.end(),
                   [&](const auto& a, const auto& b) { return reqs[a.front()].t < reqs[b.front()].t; });
  return units;
}

}  // namespace

std::optional<double> deadline_ms_of(const Slo& slo) { return slo.ttft_ms ? slo.ttft_ms : slo.e2e_ms; }

json build_request_body(const WorkloadRequest& r, const std::vector<ChatMessage>& messages, const std::string& prompt,
                        const std::string& model, const BodyOptions& extras) {
  json body;
  body["model"] = model;
  if (r.is_chat()) {
    json msgs = json::array();
    for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(msgs);
  } else {
    body["prompt"] = prompt;
  }
  body["max_tokens"] = r.max_tokens;
  body["temperature"] = 0;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (r.seed) body["seed"] = *r.seed;
  if (extras.ignore_eos) body["ignore_eos"] = true;
  if (extras.token_ids) body["return_token_ids"] = true;
  if (extras.top_logprobs > 0) {
    if (r.is_chat()) {
      body["logprobs"] = true;
      body["top_logprobs"] = extras.top_logprobs;
    } else {
      body["logprobs"] = extras.top_logprobs;
    }
  }
  return body;
}

Result<ReplayRun> run_replay(const std::vector<WorkloadRequest>& requests, const ReplayOptions& opts) {
  if (requests.empty()) return invalid_argument("the workload has no requests to replay");
  ServerInfo server = probe_server(opts.endpoint, opts.api_key, std::min(opts.timeout_s, 10.0));
  std::string model = !opts.model.empty() ? opts.model : !server.model_id.empty() ? server.model_id : "default";
  ReplayRun run;
  if (server.metrics_available) run.queue_metric = find_queue_depth(server.metrics).first;
  run.server_cpu_before_s = process_cpu_seconds(server.metrics);
  run.shadow_cpu_before_s = shadow_cpu_seconds(server.metrics);
  const std::vector<std::string> keys = opts.keys.empty() ? request_keys(requests) : opts.keys;
  LADDER_CHECK(keys.size() == requests.size(), "one key per request");

  run.results.resize(requests.size());
  auto units = arrival_units(requests);
  CapSemaphore cap(opts.concurrency);
  Progress progress;
  // The sampler sleeps between samples on this, so the run's end wakes it at
  // once instead of after up to a sample period.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool all_done = false;  // under done_mu
  const double cpu_before = cpu_seconds();
  const auto t0 = Clock::now() + std::chrono::milliseconds(20);  // room to start the first worker on time

  std::thread sampler([&] {
    auto next = t0;
    auto next_progress = t0;
    net::Endpoint ep = opts.endpoint;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(done_mu);
        if (all_done) break;
      }
      TimelineSample s;
      s.t_s = ms_between(t0, Clock::now()) / 1000.0;
      s.in_flight = progress.in_flight.load();
      if (!run.queue_metric.empty()) {
        net::HttpRequestSpec spec;
        spec.path = "/metrics";
        spec.api_key = opts.api_key;
        spec.timeout_s = 2;
        auto m = net::http_fetch(ep, spec);
        if (m.is_ok() && m->status == 200) {
          s.server_queue = find_queue_depth(parse_prometheus_text(m->body), run.queue_metric).second;
        }
      }
      run.timeline.push_back(s);
      if (opts.progress && Clock::now() >= next_progress) {
        std::fprintf(stderr, "[replay%s%s] t=%.1fs sent %d/%zu, finished %d, in flight %d, good %d, not verified %d\n",
                     opts.label.empty() ? "" : " ", opts.label.c_str(), s.t_s, progress.sent.load(), requests.size(),
                     progress.finished.load(), progress.in_flight.load(), progress.good.load(),
                     progress.failed.load());
        next_progress += std::chrono::seconds(1);
      }
      next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.sample_period_s));
      while (next < Clock::now()) next += std::chrono::milliseconds(10);
      std::unique_lock<std::mutex> lock(done_mu);
      done_cv.wait_until(lock, next, [&] { return all_done; });
    }
  });

  // One thread per arrival unit, joined as soon as it is done so that a long
  // trace does not pile up finished threads.
  std::vector<std::thread> workers(units.size());
  std::mutex finished_mu;
  std::vector<size_t> finished;
  auto reap = [&] {
    std::vector<size_t> done;
    {
      std::lock_guard lock(finished_mu);
      done.swap(finished);
    }
    for (size_t i : done) workers[i].join();
  };
  for (size_t u = 0; u < units.size(); ++u) {
    // Start each worker a little early; it sleeps to its exact send time.
    std::this_thread::sleep_until(at_offset(t0, requests[units[u].front()].t) - std::chrono::milliseconds(2));
    reap();
    workers[u] = std::thread([&, u] {
      UnitRunner runner(requests, keys, run.results, opts, model, t0, cap, progress);
      runner.run(units[u]);
      std::lock_guard lock(finished_mu);
      finished.push_back(u);
    });
  }
  for (auto& w : workers) {
    if (w.joinable()) w.join();
  }
  const auto end = Clock::now();
  {
    std::lock_guard<std::mutex> lock(done_mu);
    all_done = true;
  }
  done_cv.notify_all();
  sampler.join();
  if (run.server_cpu_before_s) {
    net::HttpRequestSpec spec;
    spec.path = "/metrics";
    spec.api_key = opts.api_key;
    spec.timeout_s = std::min(opts.timeout_s, 10.0);
    auto m = net::http_fetch(opts.endpoint, spec);
    if (m.is_ok() && m->status == 200) {
      const auto samples = parse_prometheus_text(m->body);
      run.server_cpu_after_s = process_cpu_seconds(samples);
      run.shadow_cpu_after_s = shadow_cpu_seconds(samples);
    }
  }

  run.client_cpu_s = cpu_seconds() - cpu_before;
  run.wall_s = ms_between(t0, end) / 1000.0;
  for (const auto& r : run.results) {
    run.window_s = std::max(run.window_s, r.sent_s + r.e2e_ms / 1000.0);
    run.max_send_lag_ms = std::max(run.max_send_lag_ms, r.send_lag_ms);
  }
  if (run.window_s <= 0) run.window_s = std::max(run.wall_s, 1e-3);
  if (opts.progress) {
    std::fprintf(stderr, "[replay%s%s] done: %zu requests in %.2fs, good %d, client CPU %.2fs, max send lag %.1f ms\n",
                 opts.label.empty() ? "" : " ", opts.label.c_str(), requests.size(), run.wall_s, progress.good.load(),
                 run.client_cpu_s, run.max_send_lag_ms);
  }
  return run;
}

}  // namespace ladder::harness
