// Quality against a reference: how one request's output compares with what
// the reference configuration (rung 1 at temperature 0) produced for it.
//
// Units compared: token ids when both sides have them; otherwise the token
// texts of the logprobs when both sides have those; otherwise the bytes of
// the text. QualityCheck::compared_by says which, so a text fallback is never
// mistaken for an id check.
//
//   exact_match       the unit sequences are identical
//   first_divergence  the first position where they differ (a shorter one
//                     that is a prefix of the other diverges at its end);
//                     none when identical
//   match_fraction    positions i < min(n_ref, n_cand) with equal units,
//                     divided by max(n_ref, n_cand) (1 when both are empty)
//   kl_mean / kl_max  KL(reference || candidate) in nats over the positions
//                     where both top-k distributions are known and were
//                     conditioned on the same prefix: 0 .. first_divergence
//                     inclusive (after it the contexts differ and the
//                     distributions are no longer comparable)
//
// Top-k KL and the tail outside it. Each side reports only its top-k tokens
// (by text). A position's distributions are reduced to the reference's top-k
// tokens plus one "other" bucket:
//   P(t) = the reference's probability of t; P(other) = 1 - sum of them.
//   Q(t) = the candidate's probability of t when t is in the candidate's
//          top-k; otherwise (t fell out of it) Q(t) = min(q_k, tail_Q / (m + 1)),
//          where q_k is the candidate's smallest top-k probability (t was
//          less likely than that), tail_Q = 1 - the candidate's top-k mass,
//          and m the number of reference tokens missing from the candidate's
//          top-k (the tail is shared evenly between them and everything else).
//   Q(other) = 1 - sum over the reference's tokens of Q(t).
//   KL = sum over t of P(t) ln(P(t)/Q(t)) + P(other) ln(P(other)/Q(other)),
//        with every Q floored at 1e-10.
// Identical top-k reports give 0; a reference favourite that the candidate
// ranks below its top-k costs about P(t) ln(P(t)/Q(t)) with a small Q(t).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "harness/token_logprob.h"

namespace ladder::harness {

enum class VerifyMode { kNone, kExact, kApprox };
const char* verify_mode_name(VerifyMode m);
Result<VerifyMode> parse_verify_mode(const std::string& text);  // "exact" | "approx"

// What one side of a comparison produced.
struct OutputView {
  const std::string* text = nullptr;
  const std::vector<int64_t>* token_ids = nullptr;  // null: the server sent none
  const std::vector<TokenLogprob>* logprobs = nullptr;  // null or empty: none
};

// A slice's thresholds for --verify approx; an absent one is not checked.
struct QualityThresholds {
  std::optional<double> min_match;        // match_fraction >= this
  std::optional<int64_t> min_divergence;  // first_divergence >= this (identical passes)
  std::optional<double> max_mean_kl;      // nats
  std::optional<double> max_kl;           // nats, any single position
};

struct QualityCheck {
  VerifyMode mode = VerifyMode::kExact;
  std::string compared_by;  // "token ids" | "token texts" | "text bytes"
  bool exact_match = false;
  int64_t reference_units = 0;
  int64_t candidate_units = 0;
  std::optional<int64_t> first_divergence;
  double match_fraction = 0;
  std::optional<double> kl_mean;
  std::optional<double> kl_max;
  int64_t kl_positions = 0;
  std::optional<bool> task_check;  // the workload's expectation, when the request carries one
  bool history_differs = false;    // a later session turn was sent after different earlier replies
  bool pass = false;
  std::string reason;  // why it failed, or how it passed
};

// KL(reference || candidate) of one position, in nats (see the file comment);
// nullopt when either side has no top-k alternatives.
std::optional<double> topk_kl(const TokenLogprob& reference, const TokenLogprob& candidate);

// Fills everything but task_check, history_differs, pass and reason.
QualityCheck compare_outputs(VerifyMode mode, const OutputView& reference, const OutputView& candidate);

// Sets pass and reason: exact mode needs exact_match; approx mode needs the
// thresholds; both need task_check to be absent or true. A KL threshold with
// no position to measure it on fails (it cannot be shown to be met).
void judge(QualityCheck& q, const QualityThresholds& t);

// "min_match 0.9, max_mean_kl 0.05" ("none" when nothing is set).
std::string describe(const QualityThresholds& t);

nlohmann::json to_json(const QualityCheck& q);
nlohmann::json to_json(const QualityThresholds& t);

}  // namespace ladder::harness
