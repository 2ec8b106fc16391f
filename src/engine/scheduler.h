// Scheduler: pure logic, no threads, no model calls (vLLM v1 style).
// schedule() decides which sequences get how many tokens this step under ONE
// token budget covering decode tokens and prefill chunks, and has the
// KvCacheManager allocate their blocks; update_from_output() applies the
// sampled tokens and finishes sequences. All KV bookkeeping (block tables,
// prefix hits, publication) is the manager's; the scheduler only asks it.
//
// Policy, each step: one pass over running and waiting sequences merged in
// scheduling order (higher priority, then earliest deadline, then arrival):
//   - a running sequence gets its uncomputed tokens (1 when decoding; the
//     rest of a chunked prefill), capped by the remaining budget and
//     max_chunk_tokens. When blocks run out, the lowest-ranked running
//     sequence (lowest priority, then latest deadline, then latest arrival)
//     is preempted: its blocks are released and it returns to the waiting
//     queue to be recomputed from scratch (its full blocks stay in the prefix
//     cache). Newcomers are then not admitted this step.
//   - under a KV eviction policy, each sequence drops the blocks the policy
//     no longer keeps after every step it takes part in.
//   - a waiting sequence first takes its longest prefix-cache hit (never the
//     whole sequence: the last token is always computed, so there are logits
//     to sample), then needs a running slot (max_running) and blocks for its
//     first chunk; it may preempt running sequences it outranks, lowest
//     first, to get them. One that still does not fit closes admission for
//     this step (no overtaking in line).
// Ranks form a total order and preemption only goes from higher to lower
// rank, so sequences cannot preempt each other back and forth.
//
// Reservations in the batch: tenant t with token_share s_t > 0 has
// floor(s_t * max_batch_tokens) tokens of every step held for it, up to what
// its sequences can use this step. Other tenants' chunks never eat into a
// hold that is not yet used, so a flood by one tenant cannot starve a
// reserved tenant's prefill or decode. Holds that stay unused (a reserved
// tenant's sequence could not be admitted) go back to the others in a second
// pass, so the budget is never left idle for them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "engine/finish_reason.h"
#include "engine/request.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"

namespace ladder::engine {

struct SchedulerConfig {
  int64_t max_batch_tokens = 512;  // the token budget of one step
  int32_t max_running = 64;        // sequences in one step
  int64_t max_chunk_tokens = 0;    // per-sequence cap in one step; 0 = the budget
  int64_t context_length = 0;      // positions the model supports (> 1)
  // [n_tenants] share of each step's token budget held for the tenant while
  // it has work; empty or 0 = none. The shares sum to at most 1.
  std::vector<double> tenant_token_share;
};

// One sequence's share of a step: evaluate tokens[start_pos, start_pos + n_tokens).
struct ScheduledChunk {
  RequestId id = 0;
  int64_t start_pos = 0;
  int64_t n_tokens = 0;
  bool sample = false;  // the chunk ends at the last token: sample the next one
  // Of n_tokens, how many are the sequence's draft (Sequence::draft), after
  // its last token: the step verifies them (sample is then true).
  int64_t n_draft = 0;
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // running order
  std::vector<RequestId> preempted;    // this step, in preemption order
  int64_t n_tokens = 0;
  int64_t n_sampling() const;
};

// A request that will reach the scheduler soon (admitted, or next in the
// admission queue), for the host tier's prefetch: the keys of its prompt's
// leading full blocks (KvCacheManager::prefetch_keys).
struct PrefetchCandidate {
  std::span<const kv::BlockKey> keys;
};

struct SequenceUpdate {
  RequestId id = 0;
  int32_t token = 0;
  FinishReason finish = FinishReason::kNone;
};

class Scheduler {
 public:
  // The KV cache manager must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, kv::KvCacheManager& kv);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a sequence. Errors: those of validate(), a duplicate id.
  Status add(RequestId id, std::span<const int32_t> prompt, const StopCriteria& stop,
             const SchedulingClass& scheduling, const kv::BlockKey& ns_digest);

  // What the scheduler itself must refuse: an empty prompt or max_tokens < 1
  // (kInvalidArgument), a prompt that leaves no room in the context or a
  // sequence that could never fit the KV pool alone (kOutOfRange; under KV
  // eviction it needs its budget's blocks plus one chunk's). Reads only
  // immutable state, so another thread may call it.
  Status validate(int64_t n_prompt, const StopCriteria& stop) const;

  SchedulerOutput schedule();

  // sampled: one token per chunk with sample == true, in chunk order.
  // stopped (empty, or one flag per sampled token): the caller's own stop
  // criteria (stop strings) ended that sequence with this token. Returns one
  // update per sampled token; finished sequences are removed and their blocks
  // released (full ones stay in the prefix cache).
  std::vector<SequenceUpdate> update_from_output(const SchedulerOutput& output, std::span<const int32_t> sampled,
                                                 std::span<const bool> stopped = {});
  // The speculative form: emitted[i] holds what the i-th sampling chunk
  // produced -- the accepted prefix of its draft, then one sampled token (so
  // 1..n_draft+1 tokens) -- and stopped[i] flags its last token. The KV of
  // rejected draft positions is truncated away; tokens after one that
  // finishes the sequence are dropped. One update per token kept.
  std::vector<SequenceUpdate> update_from_runs(const SchedulerOutput& output,
                                               std::span<const std::vector<int32_t>> emitted,
                                               std::span<const bool> stopped = {});

  // Proposes draft tokens for a decoding sequence (running, only its last
  // token uncomputed). The next schedule() takes as many as the step's budget
  // and free blocks allow (never preempting for them) and drops the rest.
  // False, and nothing kept, for any other sequence.
  bool set_draft(RequestId id, std::vector<int32_t> draft);

  // With a host KV tier, between steps: copies offloaded prefix blocks back
  // into the pool for the sequences that run next -- this scheduler's
  // waiting ones in scheduling order, then `upcoming` in order, as many in
  // all as there are free running slots, at least one -- so that their
  // admission finds them as prefix hits (KvCacheManager::prefetch). It uses only the free blocks the running
  // sequences will not need to finish their prompts and take one more token
  // each. Returns the blocks the candidates' chains now hold in the pool.
  int64_t prefetch(std::span<const PrefetchCandidate> upcoming = {});

  // Removes a sequence and releases its blocks now. False when unknown.
  bool cancel(RequestId id);

  const Sequence* find(RequestId id) const;
  size_t n_waiting() const { return waiting_.size(); }
  size_t n_running() const { return running_.size(); }
  bool has_work() const { return !seqs_.empty(); }
  std::vector<RequestId> running_ids() const;
  std::vector<RequestId> waiting_ids() const;  // in scheduling order
  std::span<const kv::BlockId> block_table(RequestId id) const { return kv_.block_table(id); }

  int64_t n_preemptions() const { return n_preemptions_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  class Budget;
  // One pass over `order`; sequences the holds kept out go to `held_back`.
  void schedule_pass(const std::vector<Sequence*>& order, Budget& budget, SchedulerOutput& out,
                     std::vector<Sequence*>& held_back, bool first_pass, bool& admission_closed);
  void preempt(Sequence& seq);
  // After a step: publishes the sequence's newly full blocks, then applies
  // the KV eviction policy (kv_eviction.h).
  void commit_kv(const Sequence& seq);
  void remove(RequestId id);
  int64_t chunk_cap() const;

  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  std::map<RequestId, std::unique_ptr<Sequence>> seqs_;
  std::vector<Sequence*> running_;
  std::vector<Sequence*> waiting_;
  uint64_t next_arrival_ = 0;
  int64_t n_preemptions_ = 0;
  int64_t prefix_hit_tokens_ = 0;
};

}  // namespace ladder::engine
