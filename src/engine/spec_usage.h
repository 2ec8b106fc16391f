// SpecUsage: what speculative decoding did for one request (usage's
// ladder_speculative and completion_tokens_details; DESIGN.md's
// accepted-token rate and tokens per verify cycle).
#pragma once

#include <cstdint>

namespace ladder::engine {

struct SpecUsage {
  bool eligible = false;  // the engine had a draft and the request allowed speculation
  int64_t proposed = 0;  // draft tokens verified by the target
  int64_t accepted = 0;  // of them, accepted
  int64_t cycles = 0;    // verify steps (each emits accepted + 1 tokens, less a stop)
  int64_t draft_us = 0;  // this request's share of drafting time
  int64_t verify_us = 0;  // forward time of the steps that verified its drafts
  int32_t k = 0;          // draft length of the last decision (0: plain)
  bool enabled = false;   // whether the last decision speculated for it
  double predicted_gain = 1.0;  // the controller's prediction at that decision
  double measured_gain = 0;     // its measured gain then (0: not yet known)

  int64_t rejected() const { return proposed - accepted; }
  // Mean tokens emitted per verify cycle; 0 before the first.
  double tokens_per_cycle() const {
    return cycles > 0 ? static_cast<double>(accepted + cycles) / static_cast<double>(cycles) : 0.0;
  }
};

}  // namespace ladder::engine
