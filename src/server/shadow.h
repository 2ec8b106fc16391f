// ShadowVerifier: online verification of the serving configuration.
//
// `ladder serve --shadow-rate F` samples a fraction F of the finished live
// requests (of tenants that allow it) and re-runs each on a rung-1 reference
// engine in the same process: the same weights, its own small KV pool, exact
// KV, no eviction, no host tier, no speculation, one op thread held to a CPU
// budget (--shadow-budget, a share of the live op threads) by resting
// between steps (EngineConfig::max_busy_fraction); the judging thread rests
// in the same proportion to its own CPU time. The live request was sent
// with an explicit seed, so the reference samples what rung 1 would have
// sampled. The client's answer never waits for it: cases are queued after
// the response is complete (bounded; a full queue drops the sample).
//
// Each case is judged as `ladder replay --verify` judges a request against
// its rung-1 reference (harness/quality.h), by the slice's rule from the
// ledger entry that promoted the serving configuration: exact (token ids and
// finish reason identical) or approx (the slice's min_match and
// min_divergence thresholds; KL is not judged live, since the live request
// computed only the logprobs its client asked for). The evidence per slice
// and the rollback rule are ladder/shadow_evidence.h's.
//
// Rollback: when a slice falls below its margin, new requests are served by
// the next configuration down (ShadowConfig::fallbacks; in-flight requests
// finish where they are), a `ladder.rollback` line with the evidence is
// appended to the ledger, and the evidence starts over for the new
// configuration. Requests the old configuration served are not counted for
// the new one. Nothing is undone automatically.
//
// Privacy: shadow runs stay in the process; only counters and the first few
// differing response ids (with where they diverged) are kept or written.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/draft.h"
#include "engine/engine.h"
#include "grammar/compiled_grammar.h"
#include "ladder/shadow_evidence.h"

namespace ladder::server {

// A configuration to fall back to, as the ledger names it.
struct ShadowFallback {
  int rung = 1;
  std::string name;
  engine::EngineConfig engine;  // `ladder serve`'s settings; the backend adds digests, tokenizer, tenants
  engine::DraftSpec draft;
  climb::ShadowRules rules;     // what it was promoted under (rung 1: the serving entry's)
};

struct ShadowConfig {
  double rate = 0;      // share of eligible finished requests re-run; 0: off
  // Rung 1's settings, the reference's (`ladder serve` strips approximate KV,
  // eviction, the host tier and speculation off the command as given); the
  // backend adds digests and the tokenizer and sizes its pool for one
  // sequence of the whole context.
  engine::EngineConfig reference;
  double budget = 0.1;  // the reference's CPU, as a share of the live op threads (in cores)
  size_t max_pending = 256;
  climb::ShadowRules rules;  // the serving configuration's slice margins
  // The serving configuration as a ledger names it; climb_id empty: the
  // command as given (no ledger entry), and no rollback line is written.
  std::string ledger_path;
  std::string climb_id;
  double load = 1;
  int rung = 1;
  std::string name = "as given";
  std::vector<ShadowFallback> fallbacks;  // nearest first
};

// One finished live request to re-run.
struct ShadowCase {
  engine::Request request;  // as the live engine ran it (sampling.seed set)
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // its output constraint, if any
  std::vector<int32_t> live_tokens;
  engine::FinishReason live_finish = engine::FinishReason::kNone;
  std::string slice;
  std::string request_id;   // the response id its client saw
  uint64_t generation = 0;  // the configuration that served it (ShadowVerifier::generation())
};

class ShadowVerifier {
 public:
  // Switches new requests to `to`'s configuration; an error leaves the
  // serving configuration as it was.
  using SwitchFn = std::function<Status(const ShadowFallback& to)>;

  // The reference engine runs config.reference's settings (complete: digests,
  // tokenizer, pool) with one op thread busy at most config.budget x
  // live_threads of the time.
  static Result<std::unique_ptr<ShadowVerifier>> create(const model::LlamaModel& model, ShadowConfig config,
                                                        int live_threads, SwitchFn switch_to);
  ~ShadowVerifier();
  ShadowVerifier(const ShadowVerifier&) = delete;
  ShadowVerifier& operator=(const ShadowVerifier&) = delete;

  // Draws whether a request will be re-run once finished (each with
  // probability rate): a seed for it to be sampled with when it has none.
  std::optional<uint64_t> sample();
  // The serving configuration's number: 0, then one more per rollback.
  uint64_t generation() const { return generation_.load(); }
  // Queues a case (dropped, and counted, when the queue is full or the case
  // comes from a configuration that no longer serves).
  void offer(ShadowCase c);
  // Stops the reference; queued cases are dropped. Idempotent.
  void stop();

  // Prometheus text: ladder_shadow_* series.
  std::string render_metrics() const;
  // /v1/models ladder.shadow: the rate, the budget, what serves, each
  // slice's standing, the rollbacks.
  nlohmann::json describe() const;
  // CPU seconds the shadow has used: the reference's loop thread (its only
  // op thread) and the judging thread.
  double core_seconds() const;

 private:
  ShadowVerifier(ShadowConfig config, SwitchFn switch_to);
  void run();
  climb::ShadowOutcome judge(const ShadowCase& c, const std::vector<int32_t>& reference,
                             engine::FinishReason reference_finish) const;
  void roll_back(const climb::SliceStanding& standing);

  ShadowConfig config_;
  SwitchFn switch_to_;
  std::unique_ptr<engine::Engine> reference_;
  double budget_cores_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> worker_cpu_us_{0};  // the judging thread's own

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ShadowCase> pending_;
  bool judging_ = false;  // the judging thread holds a case taken from pending_
  bool stopping_ = false;
  std::mt19937_64 rng_;
  climb::ShadowEvidence evidence_;
  int serving_rung_ = 1;
  std::string serving_name_;
  size_t next_fallback_ = 0;
  uint64_t sampled_ = 0, dropped_full_ = 0, stale_ = 0, reference_errors_ = 0, verified_ = 0, failed_ = 0;
  nlohmann::json rollbacks_ = nlohmann::json::array();
  bool stranded_ = false;  // below the margin with nothing left to fall back to

  std::thread worker_;
};

}  // namespace ladder::server
