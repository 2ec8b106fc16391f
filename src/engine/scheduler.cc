#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "common/check.h"

namespace ladder::engine {
namespace {

void sort_in_order(std::vector<Sequence*>& seqs) {
  std::sort(seqs.begin(), seqs.end(), [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); });
}

}  // namespace

// The step's token budget and the holds of reserved tenants.
class Scheduler::Budget {
 public:
  Budget(int64_t total, std::vector<int64_t> holds) : left_(total), holds_(std::move(holds)) {
    for (int64_t h : holds_) held_ += h;
  }
  int64_t left() const { return left_; }
  // Tokens a sequence of `tenant` may take now: what is left, less the
  // unused holds of every other tenant.
  int64_t available(int32_t tenant) const { return left_ - (held_ - hold(tenant)); }
  void take(int32_t tenant, int64_t n) {
    left_ -= n;
    if (tenant >= 0 && static_cast<size_t>(tenant) < holds_.size()) {
      const int64_t used = std::min(n, holds_[static_cast<size_t>(tenant)]);
      holds_[static_cast<size_t>(tenant)] -= used;
      held_ -= used;
    }
  }
  void drop_holds() {
    std::fill(holds_.begin(), holds_.end(), 0);
    held_ = 0;
  }

 private:
  int64_t hold(int32_t tenant) const {
    return tenant >= 0 && static_cast<size_t>(tenant) < holds_.size() ? holds_[static_cast<size_t>(tenant)] : 0;
  }
  int64_t left_;
  std::vector<int64_t> holds_;  // [n_tenants] unused held tokens
  int64_t held_ = 0;
};

int64_t SchedulerOutput::n_sampling() const {
  return std::count_if(chunks.begin(), chunks.end(), [](const ScheduledChunk& c) { return c.sample; });
}

Scheduler::Scheduler(const SchedulerConfig& config, kv::KvCacheManager& kv) : config_(config), kv_(kv) {
  LADDER_CHECK(config_.max_batch_tokens >= 1, "the step token budget must be positive");
  LADDER_CHECK(config_.max_running >= 1, "max_running must be positive");
  LADDER_CHECK(config_.context_length > 1, "the context must hold a prompt token and an output token");
  double shares = 0;
  for (double s : config_.tenant_token_share) {
    LADDER_CHECK(s >= 0 && s <= 1, "a tenant's token share is in [0, 1]");
    shares += s;
  }
  LADDER_CHECK(shares <= 1 + 1e-9, "tenant token shares sum to at most 1");
}

Scheduler::~Scheduler() {
  for (auto& [id, seq] : seqs_) kv_.remove(id);
}

Status Scheduler::validate(int64_t n_prompt, const StopCriteria& stop) const {
  if (n_prompt <= 0) return invalid_argument("the prompt has no tokens");
  if (stop.max_tokens < 1) return invalid_argument(fmt::format("max_tokens must be >= 1, got {}", stop.max_tokens));
  if (n_prompt >= config_.context_length) {
    return out_of_range(fmt::format("the prompt has {} tokens; the context holds {} (one is needed for output)",
                                    n_prompt, config_.context_length));
  }
  // The longest this sequence can grow; it must fit the pool alone, or it
  // would preempt itself forever.
  const int64_t max_len = std::min(n_prompt + stop.max_tokens, config_.context_length);
  const int64_t bs = kv_.block_size();
  int64_t need = (max_len + bs - 1) / bs;
  // Under eviction a sequence holds at most its budget between steps, plus
  // the blocks one chunk spans during a step.
  if (kv_.eviction().enabled()) {
    need = std::min(need, kv_.eviction().budget_blocks(kv_.block_size()) + (chunk_cap() + bs - 1) / bs + 1);
  }
  if (need > kv_.n_blocks()) {
    return out_of_range(fmt::format("prompt + max_tokens ({} tokens) needs {} KV blocks; the pool has {}", max_len,
                                    need, kv_.n_blocks()));
  }
  return Status::ok();
}

Status Scheduler::add(RequestId id, std::span<const int32_t> prompt, const StopCriteria& stop,
                      const SchedulingClass& scheduling, const kv::BlockKey& ns_digest) {
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  LADDER_RETURN_IF_ERROR(validate(n_prompt, stop));
  if (seqs_.count(id) != 0) return invalid_argument(fmt::format("request id {} is already queued", id));

  auto seq = std::make_unique<Sequence>();
  seq->id = id;
  seq->scheduling = scheduling;
  seq->stop = stop;
  seq->arrival = next_arrival_++;
  seq->tokens.assign(prompt.begin(), prompt.end());
  seq->n_prompt = n_prompt;
  kv_.add(id, ns_digest);
  waiting_.push_back(seq.get());
  seqs_.emplace(id, std::move(seq));
  return Status::ok();
}

int64_t Scheduler::chunk_cap() const {
  return config_.max_chunk_tokens > 0 ? config_.max_chunk_tokens : config_.max_batch_tokens;
}

void Scheduler::preempt(Sequence& seq) {
  kv_.release(seq.id);
  seq.n_computed = 0;
  seq.draft.clear();
  seq.state = SequenceState::kWaiting;
  ++seq.n_preemptions;
  ++n_preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), &seq));
  waiting_.push_back(&seq);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  sort_in_order(running_);
  sort_in_order(waiting_);
  // One pass over running and waiting sequences merged in scheduling order.
  std::vector<Sequence*> order;
  order.reserve(running_.size() + waiting_.size());
  std::merge(running_.begin(), running_.end(), waiting_.begin(), waiting_.end(), std::back_inserter(order),
             [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); });

  // Holds: each reserved tenant's share, up to what its sequences can use:
  // running ones, and waiting ones for which a running slot is free.
  std::vector<int64_t> holds(config_.tenant_token_share.size(), 0);
  if (!holds.empty()) {
    std::vector<int64_t> demand(holds.size(), 0);
    auto free_slots = static_cast<int64_t>(config_.max_running) - static_cast<int64_t>(running_.size());
    for (const Sequence* s : order) {
      if (s->state == SequenceState::kWaiting && free_slots-- <= 0) continue;
      const auto t = static_cast<size_t>(s->scheduling.tenant);
      if (t < demand.size()) demand[t] += std::min(s->n_uncomputed(), chunk_cap());
    }
    for (size_t t = 0; t < holds.size(); ++t) {
      const auto share = static_cast<int64_t>(
          std::floor(config_.tenant_token_share[t] * static_cast<double>(config_.max_batch_tokens)));
      holds[t] = std::min(share, demand[t]);
    }
  }
  Budget budget(config_.max_batch_tokens, std::move(holds));
  std::vector<Sequence*> held_back;
  bool admission_closed = false;
  schedule_pass(order, budget, out, held_back, /*first_pass=*/true, admission_closed);
  if (!held_back.empty() && budget.left() > 0) {
    // What the holds kept back and no reserved tenant used goes to the rest.
    budget.drop_holds();
    std::vector<Sequence*> unused;
    schedule_pass(held_back, budget, out, unused, /*first_pass=*/false, admission_closed);
  }
  out.n_tokens = config_.max_batch_tokens - budget.left();
  // A draft not scheduled this step is stale by the next.
  for (Sequence* s : running_) {
    if (s->draft.empty()) continue;
    const bool verified = std::any_of(out.chunks.begin(), out.chunks.end(),
                                      [&](const ScheduledChunk& c) { return c.id == s->id && c.n_draft > 0; });
    if (!verified) s->draft.clear();
  }
  return out;
}

int64_t Scheduler::prefetch(std::span<const PrefetchCandidate> upcoming) {
  if (!kv_.has_host_tier() || kv_.host_tier()->n_blocks() == 0) return 0;
  int64_t blocks = kv_.n_free_blocks();
  for (const Sequence* s : running_) blocks -= kv_.blocks_needed(s->id, static_cast<int64_t>(s->tokens.size()) + 1);
  int64_t held = 0;
  // As many as the free running slots (at least the head of the line: a slot
  // frees as soon as a running sequence finishes).
  int64_t candidates = std::max<int64_t>(1, int64_t{config_.max_running} - static_cast<int64_t>(running_.size()));
  sort_in_order(waiting_);
  for (const Sequence* s : waiting_) {
    if (blocks <= 0 || candidates-- <= 0) return held;
    const int64_t n = kv_.prefetch(s->id, s->tokens, blocks);
    blocks -= n;
    held += n;
  }
  for (const PrefetchCandidate& c : upcoming) {
    if (blocks <= 0 || candidates-- <= 0) return held;
    const int64_t n = kv_.prefetch_chain(c.keys, blocks);
    blocks -= n;
    held += n;
  }
  return held;
}

bool Scheduler::set_draft(RequestId id, std::vector<int32_t> draft) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  Sequence& seq = *it->second;
  if (seq.state != SequenceState::kRunning || seq.n_uncomputed() != 1) return false;
  seq.draft = std::move(draft);
  return true;
}

void Scheduler::schedule_pass(const std::vector<Sequence*>& order, Budget& budget, SchedulerOutput& out,
                              std::vector<Sequence*>& held_back, bool first_pass, bool& admission_closed) {
  // In the first pass everything scheduled before a sequence outranks it, so
  // the lowest-ranked running sequence (running_.back(), kept sorted) is
  // never one already scheduled unless it is the sequence itself. The second
  // pass (held-back sequences, after lower-ranked ones ran) must not preempt.
  const bool may_preempt = first_pass;
  auto scheduled = [&](const Sequence* s) {
    return std::any_of(out.chunks.begin(), out.chunks.end(), [&](const ScheduledChunk& c) { return c.id == s->id; });
  };
  auto preempt_lowest = [&] {
    Sequence& victim = *running_.back();
    LADDER_CHECK(!scheduled(&victim), "a preemption victim was already scheduled this step");
    out.preempted.push_back(victim.id);
    preempt(victim);
  };
  auto was_preempted = [&](const Sequence* s) {
    return std::find(out.preempted.begin(), out.preempted.end(), s->id) != out.preempted.end();
  };
  // admission_closed: set once a running sequence had to preempt for its own
  // blocks (the freed blocks are not for newcomers) or a waiting one did not
  // fit (no overtaking in line); it stays closed in the second pass.
  for (Sequence* seq_ptr : order) {
    if (budget.left() <= 0) break;
    Sequence& seq = *seq_ptr;
    if (was_preempted(&seq)) continue;
    const int64_t allowed = std::min(budget.available(seq.scheduling.tenant), chunk_cap());

    if (seq.state == SequenceState::kRunning) {
      const int64_t n_real = std::min(seq.n_uncomputed(), allowed);
      LADDER_CHECK(seq.n_uncomputed() > 0, "a running sequence has nothing to compute");
      if (n_real <= 0) {
        held_back.push_back(&seq);
        continue;
      }
      // Draft tokens ride along only where the budget and free blocks allow;
      // they never preempt anyone.
      int64_t n_draft = 0;
      if (!seq.draft.empty() && n_real == seq.n_uncomputed()) {
        n_draft = std::min(static_cast<int64_t>(seq.draft.size()), allowed - n_real);
        if (n_draft > 0 && !kv_.allocate(seq.id, seq.n_computed + n_real + n_draft)) n_draft = 0;
      }
      seq.draft.resize(static_cast<size_t>(n_draft));
      const int64_t n = n_real + n_draft;
      bool self_preempted = false;
      bool fits = kv_.allocate(seq.id, seq.n_computed + n);
      while (!fits && may_preempt) {
        admission_closed = true;
        self_preempted = running_.back() == &seq;
        preempt_lowest();
        if (self_preempted) break;
        fits = kv_.allocate(seq.id, seq.n_computed + n);
      }
      if (self_preempted) break;
      if (!fits) continue;
      out.chunks.push_back(
          {seq.id, seq.n_computed, n, seq.n_computed + n_real == static_cast<int64_t>(seq.tokens.size()), n_draft});
      budget.take(seq.scheduling.tenant, n);
      continue;
    }

    if (admission_closed) continue;
    if (allowed <= 0) {
      held_back.push_back(&seq);
      continue;
    }
    // A newcomer may displace running sequences it outranks (lowest first)
    // for a running slot or for blocks; otherwise it waits.
    auto can_displace = [&] { return may_preempt && !running_.empty() && goes_before(seq, *running_.back()); };
    while (static_cast<int32_t>(running_.size()) >= config_.max_running && can_displace()) preempt_lowest();
    if (static_cast<int32_t>(running_.size()) >= config_.max_running) {
      admission_closed = true;
      continue;
    }
    seq.n_computed = kv_.acquire_prefix(seq.id, seq.tokens);
    const int64_t n = std::min(seq.n_uncomputed(), allowed);
    bool fits = kv_.allocate(seq.id, seq.n_computed + n);
    while (!fits && can_displace()) {
      preempt_lowest();
      fits = kv_.allocate(seq.id, seq.n_computed + n);
    }
    if (!fits) {
      // Hit blocks stay referenced only while the sequence runs.
      kv_.release(seq.id);
      seq.n_computed = 0;
      admission_closed = true;
      continue;
    }
    if (!seq.ever_scheduled) {
      seq.prefix_hit_tokens = seq.n_computed;
      seq.ever_scheduled = true;
    }
    prefix_hit_tokens_ += seq.n_computed;
    seq.state = SequenceState::kRunning;
    std::erase(waiting_, &seq);
    running_.insert(std::upper_bound(running_.begin(), running_.end(), &seq,
                                     [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); }),
                    &seq);
    out.chunks.push_back({seq.id, seq.n_computed, n, seq.n_computed + n == static_cast<int64_t>(seq.tokens.size())});
    budget.take(seq.scheduling.tenant, n);
  }
}

std::vector<SequenceUpdate> Scheduler::update_from_output(const SchedulerOutput& output,
                                                          std::span<const int32_t> sampled,
                                                          std::span<const bool> stopped) {
  std::vector<std::vector<int32_t>> emitted;
  emitted.reserve(sampled.size());
  for (int32_t t : sampled) emitted.push_back({t});
  return update_from_runs(output, emitted, stopped);
}

std::vector<SequenceUpdate> Scheduler::update_from_runs(const SchedulerOutput& output,
                                                        std::span<const std::vector<int32_t>> emitted,
                                                        std::span<const bool> stopped) {
  LADDER_CHECK(static_cast<int64_t>(emitted.size()) == output.n_sampling(),
               "one emitted run per sampling chunk is required");
  LADDER_CHECK(stopped.empty() || stopped.size() == emitted.size(), "one stop flag per sampling chunk");
  std::vector<SequenceUpdate> updates;
  size_t k = 0;
  for (const ScheduledChunk& chunk : output.chunks) {
    auto it = seqs_.find(chunk.id);
    LADDER_CHECK(it != seqs_.end(), "a scheduled sequence vanished before its output");
    Sequence& seq = *it->second;
    LADDER_CHECK(seq.n_computed == chunk.start_pos, "a chunk was applied twice or out of order");
    LADDER_CHECK(chunk.n_draft == 0 || chunk.sample, "a draft is verified only by a sampling chunk");
    seq.n_computed += chunk.n_tokens - chunk.n_draft;
    if (!chunk.sample) {
      commit_kv(seq);
      continue;
    }
    const bool stopped_by_caller = !stopped.empty() && stopped[k];
    const std::vector<int32_t>& run = emitted[k++];
    LADDER_CHECK(!run.empty() && static_cast<int64_t>(run.size()) <= chunk.n_draft + 1,
                 "a sampling chunk emits 1 to n_draft + 1 tokens");
    // Accepted draft tokens have their KV written by this step; the rest of
    // the draft's positions are cut (their blocks freed, a partly kept block
    // rewritten later, never published before).
    const auto n_accepted = static_cast<int64_t>(run.size()) - 1;
    for (int64_t i = 0; i < n_accepted; ++i) {
      LADDER_CHECK(run[static_cast<size_t>(i)] == seq.draft[static_cast<size_t>(i)],
                   "an accepted token differs from the draft");
    }
    seq.n_computed += n_accepted;
    if (chunk.n_draft > 0) kv_.truncate(seq.id, seq.n_computed);
    seq.draft.clear();
    for (size_t i = 0; i < run.size(); ++i) {
      const int32_t token = run[i];
      seq.tokens.push_back(token);
      FinishReason finish = FinishReason::kNone;
      if ((stopped_by_caller && i + 1 == run.size()) || seq.stop.stop_token_ids.count(token) != 0) {
        finish = FinishReason::kStop;
      } else if (seq.n_output() >= seq.stop.max_tokens ||
                 static_cast<int64_t>(seq.tokens.size()) >= config_.context_length) {
        finish = FinishReason::kLength;
      }
      updates.push_back({seq.id, token, finish});
      if (finish != FinishReason::kNone) break;
    }
    // A finish inside the accepted run drops the tokens after it.
    seq.n_computed = std::min(seq.n_computed, static_cast<int64_t>(seq.tokens.size()));
    commit_kv(seq);
    if (updates.back().finish != FinishReason::kNone) remove(seq.id);
  }
  return updates;
}

void Scheduler::commit_kv(const Sequence& seq) {
  kv_.publish(seq.id, seq.tokens, seq.n_computed);
  kv_.evict(seq.id, seq.n_computed);
}

void Scheduler::remove(RequestId id) {
  auto it = seqs_.find(id);
  LADDER_CHECK(it != seqs_.end(), "remove() of an unknown sequence");
  Sequence* seq = it->second.get();
  kv_.remove(id);
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  seqs_.erase(it);
}

bool Scheduler::cancel(RequestId id) {
  if (seqs_.count(id) == 0) return false;
  remove(id);
  return true;
}

const Sequence* Scheduler::find(RequestId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

std::vector<RequestId> Scheduler::running_ids() const {
  std::vector<RequestId> ids;
  for (const Sequence* s : running_) ids.push_back(s->id);
  return ids;
}

std::vector<RequestId> Scheduler::waiting_ids() const {
  std::vector<Sequence*> sorted = waiting_;
  sort_in_order(sorted);
  std::vector<RequestId> ids;
  for (const Sequence* s : sorted) ids.push_back(s->id);
  return ids;
}

}  // namespace ladder::engine
