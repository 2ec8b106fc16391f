#include "engine/speculator.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"

namespace ladder::engine {

std::vector<SampledToken> sample_verified(Sampler& sampler, std::span<const float> rows, size_t n_vocab,
                                          std::span<const int32_t> prompt, std::span<const int32_t> output,
                                          std::span<const int32_t> draft) {
  LADDER_CHECK(rows.size() == (draft.size() + 1) * n_vocab, "one logit row per verified position");
  std::vector<SampledToken> emitted;
  std::vector<int32_t> extended;  // output + the accepted draft so far (penalties see it)
  if (!draft.empty()) {
    extended.reserve(output.size() + draft.size());
    extended.assign(output.begin(), output.end());
  }
  for (size_t i = 0; i <= draft.size(); ++i) {
    std::span<const int32_t> out = draft.empty() ? output : std::span<const int32_t>(extended);
    emitted.push_back(sampler.sample(rows.subspan(i * n_vocab, n_vocab), prompt, out));
    if (i == draft.size() || emitted.back().token != draft[i]) break;
    extended.push_back(draft[i]);
  }
  return emitted;
}

Speculator::Speculator(SpeculativeConfig config)
    : config_(std::move(config)), controller_(std::max(1, config_.k), config_.adaptive) {
  LADDER_CHECK(config_.draft != nullptr, "a Speculator needs a draft");
}

int64_t Speculator::propose(Scheduler& scheduler, const std::function<SpecState&(RequestId)>& state,
                            ops::ThreadPool& pool) {
  const int64_t ctx = scheduler.config().context_length;
  std::vector<RequestId> ids;
  std::vector<SpecCandidate> candidates;
  int64_t n_others = 0, others_context = 0;
  for (RequestId id : scheduler.running_ids()) {
    const Sequence* seq = scheduler.find(id);
    if (seq == nullptr || seq->n_uncomputed() != 1) continue;
    SpecState& s = state(id);
    // Emitting k + 1 tokens must stay within max_tokens and the context.
    const int64_t cap = std::min(seq->stop.max_tokens - seq->n_output() - 1,
                                 ctx - static_cast<int64_t>(seq->tokens.size()));
    const auto context = static_cast<int64_t>(seq->tokens.size());
    if (!s.wanted || cap < 1) {
      ++n_others;
      others_context += context;
      continue;
    }
    ids.push_back(id);
    candidates.push_back({s.acceptance.rate(controller_.global_acceptance()),
                          static_cast<int32_t>(std::min<int64_t>(cap, controller_.k_max())), context, s.steps_off});
  }
  if (ids.empty()) return 0;
  const SpecPlan plan = controller_.plan(candidates, n_others, others_context);
  std::vector<DraftInput> inputs;
  for (size_t i = 0; i < ids.size(); ++i) {
    SpecState& s = state(ids[i]);
    s.usage.enabled = plan.on[i];
    s.usage.k = plan.on[i] ? plan.k : 0;  // the decision; the last cycles may be shorter (max_tokens)
    s.usage.predicted_gain = plan.predicted_gain;
    s.usage.measured_gain = plan.measured_gain;
    s.steps_off = plan.on[i] ? 0 : s.steps_off + 1;
    if (!plan.on[i]) continue;
    DraftInput in;
    in.id = ids[i];
    in.tokens = scheduler.find(ids[i])->tokens;
    in.k = std::min(plan.k, candidates[i].k_cap);
    inputs.push_back(std::move(in));
  }
  if (inputs.empty()) return 0;
  const auto start = std::chrono::steady_clock::now();
  config_.draft->propose(inputs, pool);
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  // Verification adds one to three tokens per sequence for the draft to
  // catch up on; more (a prompt, a pause) is not the steady cost.
  int64_t caught_up = 0, context = 0;
  for (const DraftInput& in : inputs) {
    caught_up += in.n_caught_up;
    context += static_cast<int64_t>(in.tokens.size());
  }
  if (caught_up <= 2 * static_cast<int64_t>(inputs.size())) {
    controller_.observe_draft(static_cast<int64_t>(inputs.size()), context, plan.k, static_cast<double>(us));
  }
  draft_us_ += us;
  for (DraftInput& in : inputs) {
    LADDER_CHECK(static_cast<int32_t>(in.out.size()) <= in.k, "a draft proposed more tokens than asked");
    state(in.id).usage.draft_us += us / static_cast<int64_t>(inputs.size());
    if (!in.out.empty()) scheduler.set_draft(in.id, std::move(in.out));
  }
  return us;
}

void Speculator::record_cycle(SpecState& s, int64_t n_draft, int64_t n_accepted, int64_t verify_us) {
  const bool rejected = n_accepted < n_draft;
  s.usage.proposed += n_draft;
  s.usage.accepted += n_accepted;
  ++s.usage.cycles;
  s.usage.verify_us += verify_us;
  s.acceptance.add(n_accepted, rejected);
  controller_.observe_cycle(n_accepted, rejected);
  proposed_ += n_draft;
  accepted_ += n_accepted;
  ++cycles_;
}

void Speculator::publish(EngineMetrics& m) const {
  m.spec = {proposed_,
            accepted_,
            cycles_,
            draft_us_,
            verify_us_,
            controller_.last_enabled(),
            controller_.last_k(),
            controller_.last_gain(),
            controller_.measured_gain()};
  for (int b = 0; b < kSpecBatchBuckets; ++b) {
    const int64_t batch = int64_t{1} << b;
    m.spec.predicted_by_batch[static_cast<size_t>(b)] = controller_.predicted_gain_at(batch);
    m.spec.measured_by_batch[static_cast<size_t>(b)] = controller_.measured_gain_at(batch);
  }
}

}  // namespace ladder::engine
