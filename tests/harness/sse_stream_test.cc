// SSE framing and the measurements taken from an OpenAI-style stream.
#include "harness/sse_stream.h"

#include <gtest/gtest.h>

namespace ladder::harness {
namespace {

// A chat stream as an OpenAI-compatible server sends it: a role chunk, two
// reasoning deltas, three answer deltas, a finish chunk, a usage chunk, [DONE].
const char* kStream =
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"},\"finish_reason\":null}]}\n\n"
    ": keep-alive comment\n\n"
    "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\" ok\"},\"finish_reason\":null}]}\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"lo \"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"there\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"ladder\":{\"ttft_ms\":3.5}}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":9}}\n\n"
    "data: [DONE]\n\n";

TEST(Sse, EventsSurviveAnySplit) {
  const std::string all = kStream;
  std::vector<std::string> whole;
  SseParser p1;
  p1.feed(all, whole);
  ASSERT_EQ(whole.size(), 9u);
  EXPECT_EQ(whole.back(), "[DONE]");
  for (size_t step : {1u, 2u, 7u, 33u}) {
    SseParser p;
    std::vector<std::string> got;
    for (size_t i = 0; i < all.size(); i += step) p.feed(all.substr(i, step), got);
    EXPECT_EQ(got, whole) << "split every " << step;
  }
  SseParser multi;
  std::vector<std::string> ev;
  multi.feed("data: a\ndata: b\n\n", ev);
  EXPECT_EQ(ev, (std::vector<std::string>{"a\nb"}));
}

TEST(Sse, AccumulatorMeasuresTheStream) {
  RequestResult r;
  r.http_status = 200;
  StreamAccumulator acc(r);
  SseParser p;
  std::vector<std::string> events;
  p.feed(kStream, events);
  // Event i arrives at 10 * (i + 1) ms.
  for (size_t i = 0; i < events.size(); ++i) acc.on_event(events[i], 10.0 * static_cast<double>(i + 1));
  acc.finish(100.0);
  EXPECT_TRUE(acc.saw_done());
  EXPECT_EQ(r.sse_events, 8);    // [DONE] is not a data event
  EXPECT_EQ(r.token_chunks, 5);  // the role chunk carries no text
  EXPECT_DOUBLE_EQ(*r.ttft_ms, 20.0);   // first reasoning delta
  EXPECT_DOUBLE_EQ(*r.ttfat_ms, 40.0);  // first answer delta
  EXPECT_EQ(r.itl_ms, (std::vector<double>{10, 10, 10, 10}));
  EXPECT_EQ(r.text, "Hello there");
  EXPECT_EQ(r.reasoning_text, "hmm ok");
  EXPECT_EQ(r.finish_reason, "stop");
  // Output tokens from usage (9), not the 5 text chunks; TPOT = (100 - 20) / 8.
  EXPECT_EQ(r.output_tokens, 9);
  EXPECT_EQ(r.prompt_tokens, 12);
  EXPECT_DOUBLE_EQ(*r.tpot_ms, 10.0);
  EXPECT_DOUBLE_EQ(r.server_timings["ttft_ms"].get<double>(), 3.5);
  verify_result(r, Expectation{Expectation::Kind::kExact, "Hello there"});
  EXPECT_TRUE(r.verified);
}

TEST(Sse, ErrorsAndCompletionsChunks) {
  RequestResult r;
  StreamAccumulator acc(r);
  acc.on_event("{\"choices\":[{\"text\":\"abc\",\"finish_reason\":null}]}", 5);
  acc.on_event("{\"error\":{\"message\":\"engine overloaded\"}}", 6);
  acc.on_event("{not json", 7);
  EXPECT_EQ(r.text, "abc");
  EXPECT_DOUBLE_EQ(*r.ttft_ms, 5);
  EXPECT_EQ(r.error, "engine overloaded");
  acc.finish(8);
  EXPECT_FALSE(r.tpot_ms.has_value());  // no usage: no TPOT
}

// return_token_ids, top-5 logprobs and speculative usage as a Ladder (or
// vLLM) stream carries them; an id-only chunk (a character split across
// tokens) is a token arrival too.
TEST(Sse, TokenIdsLogprobsAndSpeculativeUsage) {
  RequestResult r;
  r.http_status = 200;
  StreamAccumulator acc(r);
  acc.on_event(R"({"choices":[{"text":"Hel","token_ids":[7,8],"logprobs":{"tokens":["He","l"],)"
               R"("token_logprobs":[-0.1,-0.2],"top_logprobs":[{"He":-0.1,"X":-3},{"l":-0.2}],"text_offset":[0,2]}}]})",
               10);
  acc.on_event(R"({"choices":[{"text":"","token_ids":[9],"logprobs":null}]})", 20);
  acc.on_event(R"({"choices":[{"text":"lo","token_ids":[10],"finish_reason":"length"}]})", 30);
  acc.on_event(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,)"
               R"("completion_tokens_details":{"accepted_prediction_tokens":5,"rejected_prediction_tokens":3},)"
               R"("ladder_speculative":{"proposed":8,"accepted":5,"cycles":2}}})",
               31);
  acc.finish(40);
  EXPECT_TRUE(r.has_token_ids);
  EXPECT_EQ(r.token_ids, (std::vector<int64_t>{7, 8, 9, 10}));
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.token_chunks, 3);
  EXPECT_EQ(r.itl_ms, (std::vector<double>{10, 10}));
  ASSERT_EQ(r.logprobs.size(), 2u);
  EXPECT_EQ(r.logprobs[0].top.size(), 2u);
  EXPECT_EQ(r.speculative.accepted_prediction_tokens, 5);
  EXPECT_EQ(r.speculative.rejected_prediction_tokens, 3);
  EXPECT_EQ(r.speculative.proposed, 8);
  EXPECT_EQ(r.speculative.cycles, 2);
}

TEST(Sse, ErrorCodeAndNoIdsWhenNotSent) {
  RequestResult r;
  StreamAccumulator acc(r);
  acc.on_event(R"({"choices":[{"delta":{"content":"a"}}]})", 1);
  acc.on_event(R"({"error":{"message":"late","type":"rate_limit_error","code":"deadline_exceeded"}})", 2);
  EXPECT_FALSE(r.has_token_ids);
  EXPECT_EQ(r.error_code, "deadline_exceeded");
  // A whole (non-streamed) chat answer with ids and reasoning.
  RequestResult w;
  StreamAccumulator whole(w);
  whole.on_whole_body(R"({"choices":[{"message":{"content":"42","reasoning_content":"think"},"token_ids":[4,2],)"
                      R"("finish_reason":"stop"}],"usage":{"completion_tokens":2}})",
                      50);
  EXPECT_EQ(w.token_ids, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(w.reasoning_text, "think");
  EXPECT_DOUBLE_EQ(*w.ttfat_ms, 50);
}

}  // namespace
}  // namespace ladder::harness
