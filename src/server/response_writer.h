// ResponseWriter: one request's engine events -> what its client receives,
// as SSE chunks while it streams or one JSON body at the end. A request of
// n choices is n engine requests; the writer keeps each choice's
// presentation state (logprob entries waiting for their text, the
// reasoning/answer split, the tool-call parser, the text offset) and ends the
// response once every choice has finished. Used on one thread (the stream
// pump).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/token_stream.h"
#include "grammar/tool_call_format.h"
#include "grammar/tool_call_parser.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/openai_response.h"
#include "server/prompt_scorer.h"
#include "server/responses_output.h"
#include "server/reasoning_parser.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

struct WriterOptions {
  bool stream = false;
  ResponseShape shape;
  int32_t n = 1;
  std::optional<ReasoningMarkers> reasoning;  // chat models with thinking markers
  bool reasoning_starts_inside = false;
  // Tool calls are parsed out of the answer text in this format.
  std::optional<grammar::ToolCallFormat> tool_format;
  uint64_t tool_id_seed = 0;  // seeds the call ids
  // Completions' echo: the text each choice begins with (empty: none).
  std::vector<std::string> echo;
  // Per choice: its prompt's token scores (empty: none were asked for).
  std::vector<std::shared_ptr<const std::vector<PromptTokenScore>>> prompt_scores;
  bool echo_logprobs = false;     // the echoed prompt's logprobs lead the choice's logprobs
  int32_t echo_top_logprobs = 0;  // alternatives each of those carries
  int32_t prompt_logprobs = -1;   // >= 0: the body carries vLLM's prompt_logprobs, this many alternatives
  // The Responses API's presentation (one choice), when set.
  std::shared_ptr<const ResponsesContext> responses;
};

class ResponseWriter {
 public:
  ResponseWriter(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta, WriterOptions options,
                 std::shared_ptr<ResponseChannel> channel);

  // One sampled token of choice `index` and the text it released.
  void on_token(int32_t index, const engine::StreamEvent& event);
  // The end of a choice that produced its output: its last text and finish
  // reason ("stop" becomes "tool_calls" when the choice called tools).
  void finish_choice(int32_t index, const engine::StreamEvent& event, const std::string& finish_reason);
  // After every choice finished: usage, timings; ends the response.
  void finish(const UsageInfo& usage, const ServerTimings& timings);
  // The end of a request that failed: an error event on a started stream
  // (then [DONE]), else the error response. Nothing is sent after it.
  void fail(const ApiError& error);

  bool stream_started() const { return started_ || (responses_ && responses_->started()); }
  // Answer text was produced (TTFAT: the first non-reasoning text).
  bool answered() const { return answered_; }

 private:
  struct Choice {
    std::optional<ReasoningParser> reasoning;
    std::optional<grammar::ToolCallParser> tools;
    bool role_sent = false;
    size_t text_offset = 0;
    ChoiceDelta pending;  // logprobs / token ids not yet sent
    std::string echo;     // the prompt, sent before the choice's first text
    ChoiceResult result;  // non-streaming: the whole choice
  };

  // Text and pending logprobs into the next delta (or the accumulated body).
  // at_end: the choice's last text; cut_off: it ended at max_tokens.
  void emit(int32_t index, const std::string& text, bool at_end, bool cut_off);
  void start_stream();
  TokenLogprobEntry entry_of(int32_t token, float logprob, const std::vector<engine::TokenLogprob>& top,
                             size_t n_top) const;
  // vLLM's prompt_logprobs: null for the first token, then {id: {logprob,
  // rank, decoded_token}} for the token and the top alternatives.
  nlohmann::json prompt_logprobs_json(const std::vector<PromptTokenScore>& scores) const;
  void send_delta(int32_t index, ChoiceDelta delta, size_t offset);

  const tokenizer::Tokenizer& tokenizer_;
  ResponseMeta meta_;
  std::unique_ptr<ResponsesOutput> responses_;  // the Responses API's presentation
  WriterOptions options_;
  std::shared_ptr<ResponseChannel> channel_;
  std::vector<Choice> choices_;
  bool started_ = false;
  bool answered_ = false;
  bool ended_ = false;
  int32_t last_finished_ = 0;  // the choice whose end completed the set
};

}  // namespace ladder::server
