// PrefillPolicy: whether a routed request's prompt is computed by a prefill
// worker (its KV then sent to the decode worker) or by the decode worker
// itself. Pure logic over measured costs; the router serialises calls.
//
// What each choice costs, in milliseconds of someone's time to first token:
//   local   the decode worker computes the n_local prompt tokens it does not
//           hold: this request waits local(n_local), and so does the next
//           token of each of the R sequences it is running (their steps
//           share the worker);
//   remote  the prefill worker computes the n_remote tokens it does not hold
//           (it needs the whole prefix to compute the rest: a chat turn whose
//           history only the decode worker holds costs it the whole prompt)
//           and ships the blocks the decode worker lacks: this request waits
//           remote(n_remote), the decode worker's sequences do not.
// A prompt sent to a prefill worker with q of this router's prompts in
// flight waits for them first: about q times the mean remote cost. Remote
// is chosen when remote(n_remote) + q * mean < (1 + R) * local(n_local). Both
// costs are lines a + b * n fitted by exponentially weighted least squares to
// what the router measured: remote from each /internal/prefill round trip
// sent to an idle prefill worker (a queued one's wait is priced apart) plus
// the decode worker's remaining prompt time, local from the decode
// worker's own account (its TTFT minus its queue time) of requests whose
// prompt it computed. Until each line has kMinSamples, the policy explores:
// the path with fewer samples is taken.
//
// A TPOT objective (`ladder route --tpot-ms`, else the tightest tenant
// tpot_ms; none by default) comes before the cost rule, which weighs only
// time to first token: a local prefill runs on the decode worker in steps of
// at most its prefill chunk (its per-sequence step budget, from /health), so
// each sequence decoding there while it runs waits about local(min(n_local,
// chunk)) between two tokens. When that exceeds the objective, the prompt
// goes to a prefill worker (queued there if need be: the queue costs only
// this request's TTFT) if anyone is decoding on that worker now, or if
// someone is likely to start while the prompt runs: the decode worker's
// arrival rate (this router's, decayed over ~30 s) x local(n_local) gives
// the chance of an arrival, and more than 1% (the tail a p99 TPOT target
// tolerates) counts ("tpot_slo"). Otherwise, and without an objective, the
// cost rule decides. The guard judges the gaps, not the mean TPOT a request
// is scored by, so it is conservative: a long decode could absorb one slow
// step and still meet its mean.
//
// Before the cost rule: nothing to compute (every block is believed held)
// stays local ("cached"). A local choice the queue made (remote would have
// won on an idle prefill worker) is counted as "prefill_busy", as is one
// made while exploring with every prefill worker busy. A local prefill
// stalls the decode worker's running sequences for its whole length, while
// a queued remote one costs only its own TTFT: on a 2-core machine, chat
// turns kept local whenever the prefill worker was busy (the rule before
// the queue term) gave 0.69x rung 1's goodput, sent regardless 0.99x
// (docs/BENCHMARKS.md "The same on another VM, with the prefill queue
// priced").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ladder::route {

// y = a + b * x, fitted to weighted points whose weights decay by `decay`
// per new point (1 = ordinary least squares).
class DecayingLine {
 public:
  explicit DecayingLine(double decay = 0.95) : decay_(decay) {}
  void add(double x, double y);
  int64_t samples() const { return n_; }
  // The fitted value at x; nullopt before two distinct x were seen (then the
  // mean of y, when there is one, is the best guess: see mean()).
  std::optional<double> at(double x) const;
  std::optional<double> mean() const;
  std::optional<double> slope() const;

 private:
  double decay_;
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  int64_t n_ = 0;
};

// Arrivals per second, decayed: each arrival adds 1 / tau to a rate that
// decays by exp(-dt / tau), so after a steady stream of r per second it reads
// r, and it falls back toward 0 within a few tau of quiet.
class ArrivalRate {
 public:
  explicit ArrivalRate(double tau_s = 30) : tau_s_(tau_s) {}
  void arrive(double now_s);
  double per_second(double now_s) const;

 private:
  double tau_s_;
  double rate_ = 0;
  double last_s_ = 0;
};

enum class PrefillWhere { kLocal, kRemote };

// `ladder route --prefill-policy`: measured (the rule above), always (every
// prompt with blocks to send goes to a prefill worker, as long as one is
// healthy: the unconditional split), never (decode workers compute every
// prompt: the ablation).
enum class PrefillMode { kMeasured, kAlways, kNever };
const char* prefill_mode_name(PrefillMode mode);

struct PrefillDecision {
  PrefillWhere where = PrefillWhere::kLocal;
  // cached, no_prefill_worker, policy_always, policy_never, prefill_busy,
  // exploring, tpot_slo, cheaper_remote, cheaper_local (and, from the
  // router, no_full_block)
  const char* reason = "cached";
};

// What the TPOT guard knows of the chosen decode worker.
struct DecodeWorkerLoad {
  int64_t prefill_chunk_tokens = 0;  // 0: unknown (a prompt is one step)
  double arrivals_per_s = 0;         // this router's requests placed there
};

class PrefillPolicy {
 public:
  static constexpr int64_t kMinSamples = 4;
  // The chance of an arrival during a local prefill above which the TPOT
  // guard counts it (a p99 target tolerates 1% of requests over it).
  static constexpr double kTailChance = 0.01;
  // tpot_ms: the TPOT objective (0: none).
  explicit PrefillPolicy(PrefillMode mode = PrefillMode::kMeasured, double tpot_ms = 0)
      : mode_(mode), tpot_ms_(tpot_ms) {}

  // n_local / n_remote: prompt tokens the decode worker / the best prefill
  // worker is not believed to hold; decode_running: the decode worker's other
  // requests from this router; prefill_queue: this router's prompts in
  // flight at the least busy healthy prefill worker (0: one is idle).
  PrefillDecision decide(int64_t n_local, int64_t n_remote, int64_t decode_running, bool any_prefill,
                         int64_t prefill_queue, const DecodeWorkerLoad& load = {}) const;
  void observe_remote(int64_t n_tokens, double ms) { remote_.add(static_cast<double>(n_tokens), ms); }
  void observe_local(int64_t n_tokens, double ms) { local_.add(static_cast<double>(n_tokens), ms); }
  // Uncached tokens (the same count on both workers) from which remote
  // prefill pays with nothing else running on the decode worker; nullopt
  // while unmeasured or when it never pays.
  std::optional<double> threshold_tokens() const;

 private:
  PrefillMode mode_;
  double tpot_ms_;
  DecayingLine remote_;
  DecayingLine local_;
};

}  // namespace ladder::route
