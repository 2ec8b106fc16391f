#include "harness/request_result.h"

namespace ladder::harness {

namespace {

std::string trim_ws(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool expectation_met(const std::string& text, const Expectation& expect) {
  if (expect.kind == Expectation::Kind::kExact) return trim_ws(text) == trim_ws(expect.text);
  return text.find(expect.text) != std::string::npos;
}

void verify_result(RequestResult& r, const std::optional<Expectation>& expect) {
  r.verified = false;
  if (r.http_status != 200) {
    r.verify_note = r.http_status == 0 ? "no response" : "HTTP " + std::to_string(r.http_status);
    return;
  }
  if (!r.error.empty()) {
    r.verify_note = "error: " + r.error;
    return;
  }
  if (r.finish_reason != "stop" && r.finish_reason != "length") {
    r.verify_note = r.finish_reason.empty() ? "no finish_reason" : "finish_reason " + r.finish_reason;
    return;
  }
  if (expect) {
    const bool exact = expect->kind == Expectation::Kind::kExact;
    if (!expectation_met(r.text, *expect)) {
      r.verify_note = exact ? "exact expectation not met" : "substring not found";
      return;
    }
    r.verify_note = exact ? "exact match" : "substring found";
  } else {
    r.verify_note = "finished (" + r.finish_reason + ")";
  }
  r.verified = true;
}

SloVerdict check_slo(const RequestResult& r) {
  SloVerdict v;
  if (r.slo.ttft_ms) v.ttft = r.ttft_ms && *r.ttft_ms <= *r.slo.ttft_ms;
  // Without usage the TPOT cannot be computed, so it cannot be shown to be met.
  if (r.slo.tpot_ms) v.tpot = r.tpot_ms ? *r.tpot_ms <= *r.slo.tpot_ms : (r.output_tokens >= 0 && r.output_tokens <= 1);
  if (r.slo.e2e_ms) v.e2e = r.http_status != 0 && r.e2e_ms <= *r.slo.e2e_ms;
  return v;
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kGood: return "good";
    case Outcome::kLate: return "late";
    case Outcome::kUnverified: return "unverified";
    case Outcome::kRejectedEarly: return "rejected_early";
    case Outcome::kExpired: return "expired";
    case Outcome::kError: return "error";
  }
  return "?";
}

Outcome outcome_of(const RequestResult& r) {
  if (r.http_status == 429) return r.error_code == "deadline_exceeded" ? Outcome::kExpired : Outcome::kRejectedEarly;
  if (r.http_status != 200 || !r.error.empty()) return Outcome::kError;
  if (!r.verified) return Outcome::kUnverified;
  return check_slo(r).all() ? Outcome::kGood : Outcome::kLate;
}

}  // namespace ladder::harness
