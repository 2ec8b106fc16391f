// ResponseWriter: one request's engine events -> what its client receives,
// as SSE chunks while it streams or one JSON body at the end. It owns the
// per-request presentation state: logprob entries waiting for their text,
// the reasoning/answer split, the text offset, whether the stream started.
// Used on one thread (the stream pump).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/token_stream.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/openai_response.h"
#include "server/reasoning_parser.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

struct WriterOptions {
  bool stream = false;
  ResponseShape shape;
  std::optional<ReasoningParser> reasoning;  // chat models with thinking markers
};

class ResponseWriter {
 public:
  ResponseWriter(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta, WriterOptions options,
                 std::shared_ptr<ResponseChannel> channel);

  // One sampled token and the text it released.
  void on_token(const engine::StreamEvent& event);
  // The end of a request that produced its output: the last text, the
  // finish reason, usage and timings; ends the response.
  void finish(const engine::StreamEvent& event, const std::string& finish_reason, const ServerTimings& timings);
  // The end of a request that failed: an error event on a started stream
  // (then [DONE]), else the error response.
  void fail(const ApiError& error);

  bool stream_started() const { return started_; }
  // Everything sent as answer text so far (TTFAT: the first non-reasoning text).
  bool answered() const { return answered_; }

 private:
  // Text and pending logprobs into the next delta (or the accumulated body).
  void emit(const std::string& text, bool flush_reasoning);
  void start_stream();

  const tokenizer::Tokenizer& tokenizer_;
  ResponseMeta meta_;
  WriterOptions options_;
  std::shared_ptr<ResponseChannel> channel_;
  bool started_ = false;
  bool answered_ = false;
  size_t text_offset_ = 0;
  ChoiceDelta pending_;  // logprobs / token ids not yet sent
  ChoiceDelta body_;     // non-streaming: the whole choice
};

}  // namespace ladder::server
