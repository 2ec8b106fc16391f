#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "common/check.h"

namespace ladder::engine {
namespace {

int64_t blocks_for(int64_t n_tokens, int block_size) {
  return (n_tokens + block_size - 1) / block_size;
}

void sort_in_order(std::vector<Sequence*>& seqs) {
  std::sort(seqs.begin(), seqs.end(),
            [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); });
}

}  // namespace

int64_t SchedulerOutput::n_sampling() const {
  return std::count_if(chunks.begin(), chunks.end(), [](const ScheduledChunk& c) { return c.sample; });
}

Scheduler::Scheduler(const SchedulerConfig& config, kv::BlockPool& pool, kv::PrefixCache* cache)
    : config_(config), pool_(pool), cache_(cache) {
  LADDER_CHECK(config_.max_batch_tokens >= 1, "the step token budget must be positive");
  LADDER_CHECK(config_.max_running >= 1, "max_running must be positive");
  LADDER_CHECK(config_.context_length > 1, "the context must hold a prompt token and an output token");
  if (config_.max_prompt_tokens <= 0 || config_.max_prompt_tokens > config_.context_length - 1) {
    config_.max_prompt_tokens = config_.context_length - 1;
  }
}

Scheduler::~Scheduler() {
  for (auto& [id, seq] : seqs_) seq->blocks.release_all(pool_);
}

Status Scheduler::validate(int64_t n_prompt, const StopCriteria& stop) const {
  if (n_prompt <= 0) return invalid_argument("the prompt has no tokens");
  if (stop.max_tokens < 1)
    return invalid_argument(fmt::format("max_tokens must be >= 1, got {}", stop.max_tokens));
  if (n_prompt > config_.max_prompt_tokens) {
    return out_of_range(fmt::format("the prompt has {} tokens; the limit is {} (context length {})", n_prompt,
                                    config_.max_prompt_tokens, config_.context_length));
  }
  // The longest this sequence can grow; it must fit the pool alone, or it
  // would preempt itself forever.
  const int64_t max_len = std::min(n_prompt + stop.max_tokens, config_.context_length);
  const int64_t need = blocks_for(max_len, pool_.block_size());
  if (need > pool_.n_blocks()) {
    return out_of_range(fmt::format("prompt + max_tokens ({} tokens) needs {} KV blocks; the pool has {}",
                                    max_len, need, pool_.n_blocks()));
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
  seq->ns_digest = ns_digest;
  waiting_.push_back(seq.get());
  seqs_.emplace(id, std::move(seq));
  return Status::ok();
}

int64_t Scheduler::chunk_cap() const {
  return config_.max_chunk_tokens > 0 ? config_.max_chunk_tokens : config_.max_batch_tokens;
}

bool Scheduler::ensure_blocks(Sequence& seq, int64_t n_tokens) {
  const int64_t need = blocks_for(n_tokens, pool_.block_size()) - static_cast<int64_t>(seq.blocks.size());
  if (need <= 0) return true;
  if (need > pool_.n_free()) return false;
  for (int64_t i = 0; i < need; ++i) {
    auto id = pool_.allocate();
    LADDER_CHECK(id.has_value(), "the pool ran dry below its free count");
    seq.blocks.append(*id);
  }
  return true;
}

void Scheduler::preempt(Sequence& seq) {
  seq.blocks.release_all(pool_);
  seq.n_computed = 0;
  seq.n_published = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.n_preemptions;
  ++n_preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), &seq));
  waiting_.push_back(&seq);
}

void Scheduler::take_prefix_hits(Sequence& seq) {
  if (cache_ == nullptr || !seq.blocks.empty()) return;
  const int bs = pool_.block_size();
  kv::PrefixCache::extend_keys(seq.ns_digest, seq.tokens, bs, seq.keys);
  // Leave at least the last token to compute.
  const auto max_blocks = static_cast<size_t>((static_cast<int64_t>(seq.tokens.size()) - 1) / bs);
  for (kv::BlockId b : cache_->acquire(seq.keys, max_blocks)) seq.blocks.append(b);
  seq.n_computed = static_cast<int64_t>(seq.blocks.size()) * bs;
  seq.n_published = static_cast<int64_t>(seq.blocks.size());
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_batch_tokens;

  // One pass over running and waiting sequences merged in scheduling order.
  // Everything scheduled before a sequence outranks it, so the lowest-ranked
  // running sequence (running_.back(), kept sorted) is never one already
  // scheduled unless it is the sequence itself.
  sort_in_order(running_);
  sort_in_order(waiting_);
  std::vector<Sequence*> order;
  order.reserve(running_.size() + waiting_.size());
  std::merge(running_.begin(), running_.end(), waiting_.begin(), waiting_.end(), std::back_inserter(order),
             [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); });
  std::vector<Sequence*> preempted_now;
  auto preempt_lowest = [&] {
    Sequence& victim = *running_.back();
    out.preempted.push_back(victim.id);
    preempted_now.push_back(&victim);
    preempt(victim);
  };
  auto was_preempted_now = [&](const Sequence* s) {
    return std::find(preempted_now.begin(), preempted_now.end(), s) != preempted_now.end();
  };
  // Closed once a running sequence had to preempt for its own blocks (the
  // freed blocks are not for newcomers) or a waiting one did not fit (no
  // overtaking in line).
  bool admission_closed = false;

  for (Sequence* seq_ptr : order) {
    if (budget <= 0) break;
    Sequence& seq = *seq_ptr;
    if (was_preempted_now(&seq)) continue;

    if (seq.state == SequenceState::kRunning) {
      const int64_t n = std::min({seq.n_uncomputed(), budget, chunk_cap()});
      LADDER_CHECK(n > 0, "a running sequence has nothing to compute");
      bool self_preempted = false;
      while (!ensure_blocks(seq, seq.n_computed + n)) {
        admission_closed = true;
        self_preempted = running_.back() == &seq;
        preempt_lowest();
        if (self_preempted) break;
      }
      if (self_preempted) break;
      out.chunks.push_back(
          {seq.id, seq.n_computed, n, seq.n_computed + n == static_cast<int64_t>(seq.tokens.size())});
      budget -= n;
      continue;
    }

    if (admission_closed) continue;
    // A newcomer may displace running sequences it outranks (lowest first)
    // for a running slot or for blocks; otherwise it waits.
    auto can_displace = [&] { return !running_.empty() && goes_before(seq, *running_.back()); };
    while (static_cast<int32_t>(running_.size()) >= config_.max_running && can_displace()) preempt_lowest();
    if (static_cast<int32_t>(running_.size()) >= config_.max_running) {
      admission_closed = true;
      continue;
    }
    take_prefix_hits(seq);
    const int64_t n = std::min({seq.n_uncomputed(), budget, chunk_cap()});
    bool fits = ensure_blocks(seq, seq.n_computed + n);
    while (!fits && can_displace()) {
      preempt_lowest();
      fits = ensure_blocks(seq, seq.n_computed + n);
    }
    if (!fits) {
      // Hit blocks stay referenced only while the sequence runs.
      seq.blocks.release_all(pool_);
      seq.n_computed = 0;
      seq.n_published = 0;
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
    running_.insert(
        std::upper_bound(running_.begin(), running_.end(), &seq,
                         [](const Sequence* a, const Sequence* b) { return goes_before(*a, *b); }),
        &seq);
    out.chunks.push_back(
        {seq.id, seq.n_computed, n, seq.n_computed + n == static_cast<int64_t>(seq.tokens.size())});
    budget -= n;
  }
  out.n_tokens = config_.max_batch_tokens - budget;
  return out;
}

void Scheduler::publish_full_blocks(Sequence& seq) {
  if (cache_ == nullptr) return;
  const int bs = pool_.block_size();
  const int64_t n_full = seq.n_computed / bs;
  if (n_full <= seq.n_published) return;
  kv::PrefixCache::extend_keys(seq.ns_digest, std::span(seq.tokens).first(static_cast<size_t>(n_full) * bs),
                               bs, seq.keys);
  for (int64_t j = seq.n_published; j < n_full; ++j) {
    cache_->insert(seq.keys[static_cast<size_t>(j)], seq.blocks[static_cast<size_t>(j)]);
  }
  seq.n_published = n_full;
}

std::vector<SequenceUpdate> Scheduler::update_from_output(const SchedulerOutput& output,
                                                          std::span<const int32_t> sampled) {
  LADDER_CHECK(static_cast<int64_t>(sampled.size()) == output.n_sampling(),
               "one sampled token per sampling chunk is required");
  std::vector<SequenceUpdate> updates;
  size_t k = 0;
  for (const ScheduledChunk& chunk : output.chunks) {
    auto it = seqs_.find(chunk.id);
    LADDER_CHECK(it != seqs_.end(), "a scheduled sequence vanished before its output");
    Sequence& seq = *it->second;
    LADDER_CHECK(seq.n_computed == chunk.start_pos, "a chunk was applied twice or out of order");
    seq.n_computed += chunk.n_tokens;
    publish_full_blocks(seq);
    if (!chunk.sample) continue;

    const int32_t token = sampled[k++];
    seq.tokens.push_back(token);
    FinishReason finish = FinishReason::kNone;
    if (seq.stop.stop_token_ids.count(token) != 0) {
      finish = FinishReason::kStop;
    } else if (seq.n_output() >= seq.stop.max_tokens ||
               static_cast<int64_t>(seq.tokens.size()) >= config_.context_length) {
      finish = FinishReason::kLength;
    }
    updates.push_back({seq.id, token, finish});
    if (finish != FinishReason::kNone) remove(seq.id);
  }
  return updates;
}

void Scheduler::remove(RequestId id) {
  auto it = seqs_.find(id);
  LADDER_CHECK(it != seqs_.end(), "remove() of an unknown sequence");
  Sequence* seq = it->second.get();
  seq->blocks.release_all(pool_);
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
