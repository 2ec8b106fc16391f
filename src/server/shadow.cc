#include "server/shadow.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "common/build_info.h"
#include "common/cpu_time.h"
#include "harness/quality.h"
#include "harness/record.h"
#include "ladder/ledger.h"
#include "server/grammar_constraint.h"

namespace ladder::server {

using nlohmann::json;

namespace {

// A Prometheus label value: the slice names the server accepts need no escaping.
std::string label(const std::string& slice) { return "{slice=\"" + slice + "\"}"; }

}  // namespace

ShadowVerifier::ShadowVerifier(ShadowConfig config, SwitchFn switch_to)
    : config_(std::move(config)),
      switch_to_(std::move(switch_to)),
      rng_(std::random_device{}()),
      evidence_(config_.rules),
      serving_rung_(config_.rung),
      serving_name_(config_.name) {}

Result<std::unique_ptr<ShadowVerifier>> ShadowVerifier::create(const model::LlamaModel& model, ShadowConfig config,
                                                               int live_threads, SwitchFn switch_to) {
  if (!(config.rate > 0 && config.rate <= 1)) return invalid_argument("--shadow-rate must be in (0, 1]");
  if (!(config.budget > 0)) return invalid_argument("--shadow-budget must be above 0");
  std::unique_ptr<ShadowVerifier> v(new ShadowVerifier(std::move(config), std::move(switch_to)));
  // One op thread, busy at most budget x live threads of the time: that many cores.
  v->budget_cores_ = std::min(1.0, v->config_.budget * std::max(1, live_threads));
  engine::EngineConfig reference = v->config_.reference;
  reference.n_threads = 1;
  reference.max_busy_fraction = v->budget_cores_;
  reference.background = true;
  reference.max_queue = 1;
  reference.tenants.clear();
  reference.speculative = engine::SpeculativeConfig{};
  reference.step_delay_ms = 0;
  reference.row_delay_ms = 0;
  reference.on_step = nullptr;
  LADDER_ASSIGN_OR_RETURN(v->reference_, engine::Engine::create(model, reference));
  v->worker_ = std::thread([p = v.get()] { p->run(); });
  return v;
}

ShadowVerifier::~ShadowVerifier() { stop(); }

void ShadowVerifier::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    pending_.clear();
  }
  cv_.notify_all();
  if (reference_) reference_->shutdown();  // ends the stream the worker may be reading
  if (worker_.joinable()) worker_.join();
}

std::optional<uint64_t> ShadowVerifier::sample() {
  std::lock_guard lock(mu_);
  if (stopping_ || !std::bernoulli_distribution(config_.rate)(rng_)) return std::nullopt;
  return rng_();
}

void ShadowVerifier::offer(ShadowCase c) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    ++sampled_;
    if (c.generation != generation_.load()) {
      ++stale_;
      return;
    }
    if (pending_.size() >= config_.max_pending) {
      ++dropped_full_;
      return;
    }
    pending_.push_back(std::move(c));
  }
  cv_.notify_one();
}

void ShadowVerifier::run() {
  while (true) {
    ShadowCase c;
    {
      std::unique_lock lock(mu_);
      // This thread's own work (submitting, reading the stream, judging)
      // rests like the reference's steps: together they keep the budget.
      const int64_t cpu_us = thread_cpu_us();
      const int64_t used_us = cpu_us - worker_cpu_us_.load();
      worker_cpu_us_ = cpu_us;
      cv_.wait_for(lock, rest_for_busy_fraction(used_us, budget_cores_), [&] { return stopping_; });
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      // Only this thread rolls back, and a rollback empties the queue: what
      // is queued was served by the configuration serving now.
      c = std::move(pending_.front());
      pending_.pop_front();
      judging_ = true;
    }
    // Whichever way this case ends, it no longer waits for the reference.
    struct Judged {
      ShadowVerifier* v;
      ~Judged() {
        std::lock_guard lock(v->mu_);
        v->judging_ = false;
      }
    } judged{this};
    c.slice = evidence_.slice_key(c.slice);
    engine::Request r = c.request;
    r.constraint = c.grammar ? std::make_shared<GrammarConstraint>(c.grammar) : nullptr;
    r.scheduling = engine::SchedulingClass{};
    r.kv_import = nullptr;
    r.export_kv = false;
    r.speculative = false;
    auto submitted = reference_->submit(std::move(r));
    if (!submitted.is_ok()) {
      std::lock_guard lock(mu_);
      if (reference_errors_++ == 0) {
        spdlog::warn("shadow: the reference refused a request: {}", submitted.status().message());
      }
      continue;
    }
    std::vector<int32_t> tokens;
    engine::FinishReason finish = engine::FinishReason::kNone;
    while (auto ev = submitted->stream->next()) {
      if (ev->kind == engine::StreamEvent::Kind::kToken) {
        tokens.push_back(ev->token.token);
      } else {
        finish = ev->finish;
      }
    }
    if (finish != engine::FinishReason::kStop && finish != engine::FinishReason::kLength) {
      std::lock_guard lock(mu_);
      if (!stopping_) ++reference_errors_;
      continue;
    }
    climb::ShadowOutcome outcome = judge(c, tokens, finish);
    std::optional<climb::SliceStanding> below;
    {
      std::lock_guard lock(mu_);
      ++(outcome.verified ? verified_ : failed_);
      below = evidence_.record(outcome);
    }
    if (below) roll_back(*below);
  }
}

climb::ShadowOutcome ShadowVerifier::judge(const ShadowCase& c, const std::vector<int32_t>& reference,
                                           engine::FinishReason reference_finish) const {
  climb::ShadowOutcome o;
  o.slice = c.slice;
  o.request_id = c.request_id;
  const climb::SliceMargin rule = evidence_.rules().margin_for(c.slice);
  const std::vector<int64_t> ref(reference.begin(), reference.end());
  const std::vector<int64_t> live(c.live_tokens.begin(), c.live_tokens.end());
  const std::string no_text;
  harness::QualityCheck q = harness::compare_outputs(rule.verify, {&no_text, &ref, nullptr}, {&no_text, &live, nullptr});
  harness::QualityThresholds t = evidence_.rules().thresholds.for_slice(c.slice);
  t.max_mean_kl.reset();  // the live side has no distributions to compare (see the file comment)
  t.max_kl.reset();
  harness::judge(q, t);
  const bool same_finish = reference_finish == c.live_finish;
  o.verified = q.pass && (rule.verify == harness::VerifyMode::kApprox || same_finish);
  if (q.exact_match) {
    o.detail = same_finish ? "identical" : fmt::format("same tokens; finish {} (reference {})",
                                                       engine::finish_reason_name(c.live_finish),
                                                       engine::finish_reason_name(reference_finish));
  } else {
    o.detail = fmt::format("first divergence at token {} of {} (reference {}); match {:.3f}",
                           q.first_divergence.value_or(0), live.size(), ref.size(), q.match_fraction);
  }
  return o;
}

void ShadowVerifier::roll_back(const climb::SliceStanding& s) {
  const std::string reason = fmt::format(
      "slice {} verified {} of {} ({:.3f}, {} verification); its upper bound {:.3f} (one-sided alpha {:.2g}, {} "
      "windows of {}) is below the margin {:.2f}",
      s.slice, s.verified, s.shadowed, s.fraction, harness::verify_mode_name(s.margin.verify), s.upper, s.alpha,
      s.windows, climb::ShadowEvidence::kWindow, s.margin.margin);
  const ShadowFallback* to = nullptr;
  int from_rung = 0;
  std::string from_name;
  {
    std::lock_guard lock(mu_);
    from_rung = serving_rung_;
    from_name = serving_name_;
    if (next_fallback_ < config_.fallbacks.size()) to = &config_.fallbacks[next_fallback_];
  }
  if (to == nullptr) {
    spdlog::error("shadow: {}; rung {} '{}' has no configuration below it to fall back to: still serving it", reason,
                  from_rung, from_name);
    std::lock_guard lock(mu_);
    stranded_ = true;
    return;
  }
  if (Status st = switch_to_(*to); !st.is_ok()) {
    spdlog::error("shadow: {}; falling back to rung {} '{}' failed: {}", reason, to->rung, to->name, st.message());
    std::lock_guard lock(mu_);
    stranded_ = true;
    return;
  }
  spdlog::warn("shadow: rolled back rung {} '{}' -> rung {} '{}' for new requests: {}", from_rung, from_name,
               to->rung, to->name, reason);
  json slices = json::array();
  json line;
  {
    std::lock_guard lock(mu_);
    for (const auto& st : evidence_.standings()) slices.push_back(climb::to_json(st));
    const engine::EngineConfig& rc = reference_->config();
    line = {{"kind", climb::kRollbackKind},
            {"schema_version", climb::kRollbackSchemaVersion},
            {"timestamp", harness::iso8601_utc_now()},
            {"climb_id", config_.climb_id},
            {"load", config_.load},
            {"from", {{"rung", from_rung}, {"name", from_name}}},
            {"to", {{"rung", to->rung}, {"name", to->name}}},
            {"slice", s.slice},
            {"reason", reason},
            {"identity", climb::to_json(climb::ServedIdentity{rc.model_digest, rc.tokenizer_digest, git_revision()})},
            {"evidence", climb::to_json(s)},
            {"slices", slices},
            {"rule",
             {{"window", climb::ShadowEvidence::kWindow},
              {"confidence", evidence_.rules().confidence},
              {"statistic", "one-sided t bound over windows' verified fractions; look j spends alpha 6/(pi^2 j^2)"}}}};
    rollbacks_.push_back(line);
    serving_rung_ = to->rung;
    serving_name_ = to->name;
    ++next_fallback_;
    evidence_ = climb::ShadowEvidence(to->rules);
    generation_.fetch_add(1);
    stale_ += pending_.size();  // served by the configuration that no longer serves
    pending_.clear();
  }
  if (!config_.ledger_path.empty() && !config_.climb_id.empty()) {
    if (Status st = climb::append_ledger_entry(config_.ledger_path, line); !st.is_ok()) {
      spdlog::error("shadow: the rollback could not be written to the ledger: {}", st.message());
    }
  }
}

double ShadowVerifier::core_seconds() const {
  return static_cast<double>(reference_->metrics().loop_cpu_us + worker_cpu_us_.load()) / 1e6;
}

std::string ShadowVerifier::render_metrics() const {
  std::lock_guard lock(mu_);
  std::string out;
  auto series = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  series("ladder_shadow_rate", "gauge", "Share of finished requests re-run on the rung-1 reference");
  out += fmt::format("ladder_shadow_rate {}\n", config_.rate);
  series("ladder_shadow_budget_cores", "gauge", "CPU cores the shadow reference may use at most");
  out += fmt::format("ladder_shadow_budget_cores {}\n", budget_cores_);
  series("ladder_shadow_core_seconds_total", "counter",
         "Core-seconds the shadow reference has used (part of process_cpu_seconds_total)");
  out += fmt::format("ladder_shadow_core_seconds_total {:.6f}\n", core_seconds());
  series("ladder_shadow_requests_total", "counter",
         "Shadow samples by outcome: verified, failed (did not verify), dropped (queue full), stale (served by a "
         "configuration rolled back since), error (the reference could not run it)");
  out += fmt::format("ladder_shadow_requests_total{{outcome=\"verified\"}} {}\n", verified_);
  out += fmt::format("ladder_shadow_requests_total{{outcome=\"failed\"}} {}\n", failed_);
  out += fmt::format("ladder_shadow_requests_total{{outcome=\"dropped\"}} {}\n", dropped_full_);
  out += fmt::format("ladder_shadow_requests_total{{outcome=\"stale\"}} {}\n", stale_);
  out += fmt::format("ladder_shadow_requests_total{{outcome=\"error\"}} {}\n", reference_errors_);
  series("ladder_shadow_pending", "gauge",
         "Shadow samples waiting for the reference (queued or being judged)");
  out += fmt::format("ladder_shadow_pending {}\n", pending_.size() + (judging_ ? 1 : 0));
  const auto standings = evidence_.standings();
  series("ladder_shadow_slice_shadowed", "gauge", "Requests of a slice shadowed since this configuration serves");
  for (const auto& s : standings) out += fmt::format("ladder_shadow_slice_shadowed{} {}\n", label(s.slice), s.shadowed);
  series("ladder_shadow_slice_verified_fraction", "gauge", "Verified share of a slice's shadowed requests");
  for (const auto& s : standings) {
    out += fmt::format("ladder_shadow_slice_verified_fraction{} {:.6f}\n", label(s.slice), s.fraction);
  }
  series("ladder_shadow_slice_upper_bound", "gauge",
         "Upper confidence bound of a slice's verified fraction at its last look (1 before the first)");
  for (const auto& s : standings) {
    out += fmt::format("ladder_shadow_slice_upper_bound{} {:.6f}\n", label(s.slice), s.upper);
  }
  series("ladder_shadow_slice_margin", "gauge", "Least verified fraction the serving configuration was promoted at");
  for (const auto& s : standings) out += fmt::format("ladder_shadow_slice_margin{} {}\n", label(s.slice), s.margin.margin);
  series("ladder_shadow_rollbacks_total", "counter", "Rollbacks to a lower rung since the server started");
  out += fmt::format("ladder_shadow_rollbacks_total {}\n", rollbacks_.size());
  series("ladder_serving_rung", "gauge", "The rung serving new requests");
  out += fmt::format("ladder_serving_rung {}\n", serving_rung_);
  return out;
}

json ShadowVerifier::describe() const {
  std::lock_guard lock(mu_);
  json slices = json::array();
  for (const auto& s : evidence_.standings()) slices.push_back(climb::to_json(s));
  return {{"rate", config_.rate},
          {"budget_cores", budget_cores_},
          {"core_seconds", core_seconds()},
          {"serving", {{"rung", serving_rung_}, {"name", serving_name_}, {"climb_id", config_.climb_id}}},
          {"below_margin_without_fallback", stranded_},
          {"slices", slices},
          {"counts",
           {{"sampled", sampled_},
            {"verified", verified_},
            {"failed", failed_},
            {"dropped", dropped_full_},
            {"stale", stale_},
            {"error", reference_errors_}}},
          {"rollbacks", rollbacks_}};
}

}  // namespace ladder::server
