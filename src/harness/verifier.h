// Verification of one request (DESIGN.md "verified"): it finished without
// error with finish_reason stop or length, met the workload's expectation
// when it carries one, and -- when replaying against a reference -- passed
// the quality check of its slice (exact: identical tokens; approx: the
// slice's thresholds). "Finished" alone is verified only without a reference.
#pragma once

#include <string>
#include <vector>

#include "harness/reference.h"
#include "harness/request_result.h"
#include "harness/verify_policy.h"
#include "harness/workload.h"

namespace ladder::harness {

class Verifier {
 public:
  // Without a reference: the finish and the expectation only.
  Verifier() = default;
  // reference must outlive the verifier.
  Verifier(VerifyMode mode, const Reference* reference, VerifyPolicy policy)
      : mode_(mode), reference_(reference), policy_(std::move(policy)) {}

  VerifyMode mode() const { return reference_ != nullptr ? mode_ : VerifyMode::kNone; }
  const VerifyPolicy& policy() const { return policy_; }

  // Sets r.verified, r.verify_note and (with a reference) r.quality; r.key and
  // r.prompt_sha256 must be set.
  void verify(RequestResult& r, const WorkloadRequest& w) const;

 private:
  VerifyMode mode_ = VerifyMode::kNone;
  const Reference* reference_ = nullptr;
  VerifyPolicy policy_;
};

}  // namespace ladder::harness
