// Server-sent events from an OpenAI-compatible streaming response, turned
// into the per-request measurements of request_result.h.
//
//   SseParser: bytes (any split) -> complete event data payloads.
//   StreamAccumulator: payloads + arrival times -> TTFT, TTFAT, ITLs, text,
//     usage, finish_reason, errors, the server's "ladder" timings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/request_result.h"

namespace ladder::harness {

class SseParser {
 public:
  // Appends bytes; pushes the data of every event completed by them (an
  // event ends at a blank line; multi-line data joins with '\n').
  void feed(std::string_view bytes, std::vector<std::string>& events);

 private:
  void take_line(std::string_view line, std::vector<std::string>& events);

  std::string pending_;  // an incomplete line
  std::string data_;     // data lines of the event being read
  bool has_data_ = false;
};

class StreamAccumulator {
 public:
  explicit StreamAccumulator(RequestResult& result) : r_(result) {}

  // One event's data, received t_ms after the request was sent.
  void on_event(const std::string& data, double t_ms);
  // A non-streamed JSON body (a server that ignored "stream": true).
  void on_whole_body(const std::string& body, double t_ms);
  // The response ended at t_ms: sets e2e and TPOT.
  void finish(double t_ms);

  bool saw_done() const { return done_; }

 private:
  void take_chunk(const nlohmann::json& j, double t_ms);

  RequestResult& r_;
  bool done_ = false;
  double last_token_ms_ = -1.0;
};

}  // namespace ladder::harness
