#include "harness/verifier.h"

namespace ladder::harness {

void Verifier::verify(RequestResult& r, const WorkloadRequest& w) const {
  verify_result(r, w.expect);
  if (reference_ == nullptr || r.http_status != 200 || !r.error.empty()) return;
  auto it = reference_->entries.find(r.key);
  if (it == reference_->entries.end()) {
    r.verified = false;
    r.verify_note = "the reference has no entry for this request";
    return;
  }
  const ReferenceEntry& e = it->second;
  OutputView ref{&e.text, e.has_token_ids ? &e.token_ids : nullptr, &e.logprobs};
  OutputView cand{&r.text, r.has_token_ids ? &r.token_ids : nullptr, &r.logprobs};
  QualityCheck q = compare_outputs(mode_, ref, cand);
  if (w.expect) q.task_check = expectation_met(r.text, *w.expect);
  q.history_differs = !e.prompt_sha256.empty() && e.prompt_sha256 != r.prompt_sha256;
  judge(q, policy_.for_slice(r.slice));
  if (q.history_differs) q.reason += " (sent after earlier replies that differ from the reference's)";
  r.verify_note = r.verified ? q.reason : r.verify_note + "; " + q.reason;
  r.verified = r.verified && q.pass;
  r.quality = std::move(q);
}

}  // namespace ladder::harness
