// Trace readers on the real traces in ../shared/traces (row counts from its
// README) and on hand-made lines whose expected values are worked out here.
#include "harness/trace_formats.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace ladder::harness {
namespace {

std::string shared_text(const std::string& rel) {
  std::string p = ladder::testing::shared_path(rel);
  return p.empty() ? "" : ladder::testing::read_file(p);
}

TEST(TraceFormats, MooncakeConversationTraceParses) {
  auto t = parse_mooncake(shared_text("traces/mooncake_conversation_trace.jsonl"), /*strict=*/true);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->rows.size(), 12031u);
  EXPECT_TRUE(t->skipped.empty());
  // First line: {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0..13]}
  EXPECT_EQ(t->rows[0].input_tokens, 6758);
  EXPECT_EQ(t->rows[0].output_tokens, 500);
  EXPECT_EQ(t->rows[0].hash_ids.size(), 14u);
  // Mooncake blocks are 512 tokens: ceil(6758 / 512) = 14 ids.
  for (const auto& r : t->rows) {
    ASSERT_EQ(static_cast<int64_t>(r.hash_ids.size()), (r.input_tokens + 511) / 512) << "line " << r.line;
  }
}

TEST(TraceFormats, AzureTracesParse) {
  auto code = parse_azure_csv(shared_text("traces/AzureLLMInferenceTrace_code.csv"), true);
  ASSERT_TRUE(code.is_ok()) << code.status().to_string();
  EXPECT_EQ(code->rows.size(), 8819u);
  auto conv = parse_azure_csv(shared_text("traces/AzureLLMInferenceTrace_conv.csv"), true);
  ASSERT_TRUE(conv.is_ok()) << conv.status().to_string();
  EXPECT_EQ(conv->rows.size(), 19366u);
  // Rows 1-2 of the code trace: 18:17:03.9799600 and 18:17:04.0319600 -> 0.052 s apart.
  EXPECT_EQ(code->rows[0].input_tokens, 4808);
  EXPECT_EQ(code->rows[0].output_tokens, 10);
  EXPECT_NEAR(code->rows[1].t_s - code->rows[0].t_s, 0.052, 1e-6);
  // The last row is 19:14:19.9280160: 57 min 15.948056 s after the first.
  EXPECT_NEAR(code->rows.back().t_s - code->rows[0].t_s, 57 * 60 + 15.948056, 1e-4);
}

TEST(TraceFormats, MalformedLinesAreReportedWithLineNumbers) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 5, \"input_length\": 10\n"                                    // line 2: broken JSON
      "{\"timestamp\": 7, \"input_length\": \"ten\", \"output_length\": 5}\n"         // line 3: a string length
      "\n"                                                                           // line 4: blank, ignored
      "{\"timestamp\": 9, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
  auto t = parse_mooncake(text, false);
  ASSERT_TRUE(t.is_ok());
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[1].line, 5);
  EXPECT_DOUBLE_EQ(t->rows[1].t_s, 0.009);
  ASSERT_EQ(t->skipped.size(), 2u);
  EXPECT_EQ(t->skipped[0].line, 2);
  EXPECT_EQ(t->skipped[1].line, 3);
  EXPECT_NE(t->skipped[1].message.find("input_length"), std::string::npos);

  auto strict = parse_mooncake(text, true);
  ASSERT_FALSE(strict.is_ok());
  EXPECT_NE(strict.status().message().find("line 2"), std::string::npos) << strict.status().message();

  const std::string azure =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\n"
      "2023-11-16 18:15:50,-3,109\n"       // line 3: negative context
      "2023-13-16 18:15:51.0,10,1\n"       // line 4: month 13
      "2023-11-16 18:15:52.5,10\n"         // line 5: too few columns
      "2023-11-17 00:00:00.0,10,0\n";      // next day: 5 h 44 min 13.31941 s later
  auto a = parse_azure_csv(azure, false);
  ASSERT_TRUE(a.is_ok());
  ASSERT_EQ(a->rows.size(), 2u);
  ASSERT_EQ(a->skipped.size(), 3u);
  EXPECT_EQ(a->skipped[0].line, 3);
  EXPECT_EQ(a->skipped[1].line, 4);
  EXPECT_EQ(a->skipped[2].line, 5);
  EXPECT_NEAR(a->rows[1].t_s, 5 * 3600 + 44 * 60 + 13.31941, 1e-6);
}

TEST(TraceFormats, BurstGptColumnsByName) {
  const std::string text =
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "5,ChatGPT,472,18,490,Conversation log\n"
      "45,GPT-4,1087,0,1087,API log\n"
      "46,ChatGPT,abc,1,1,API log\n"
      "47.5,ChatGPT,12,3,15,API log\n";
  auto t = parse_burstgpt_csv(text, false);
  ASSERT_TRUE(t.is_ok());
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_DOUBLE_EQ(t->rows[0].t_s, 0.0);
  EXPECT_DOUBLE_EQ(t->rows[1].t_s, 40.0);
  EXPECT_DOUBLE_EQ(t->rows[2].t_s, 42.5);
  EXPECT_EQ(t->rows[1].model, "GPT-4");
  EXPECT_EQ(t->rows[1].output_tokens, 0);
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_EQ(t->skipped[0].line, 4);

  TextSynthesizer synth("one two three four five six seven eight nine ten", 4.0);
  std::vector<std::string> notes;
  auto reqs = trace_to_requests(*t, "burstgpt", {}, synth, notes);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].tenant, "GPT-4");
  EXPECT_EQ(reqs[1].max_tokens, 1);  // 0 output tokens are sent as 1, and said so
  EXPECT_EQ(reqs[0].prompt.size(), 472u * 4);
  bool noted = false;
  for (const auto& n : notes) noted |= n.find("0 output tokens") != std::string::npos;
  EXPECT_TRUE(noted);

  EXPECT_FALSE(parse_burstgpt_csv("Time,Model\n1,x\n", false).is_ok());  // missing columns
}

TEST(TraceFormats, EqualHashIdsGiveEqualPrefixes) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 9, \"hash_ids\": [7, 8, 9]}\n"
      "{\"timestamp\": 10, \"input_length\": 700, \"output_length\": 3, \"hash_ids\": [7, 4]}\n"
      "{\"timestamp\": 20, \"input_length\": 300, \"output_length\": 3, \"hash_ids\": [5]}\n";
  auto t = parse_mooncake(text, true);
  ASSERT_TRUE(t.is_ok());
  auto corpus = ladder::testing::read_file(ladder::testing::shared_path("text/war-and-peace.txt"));
  TextSynthesizer synth(corpus, 2.0);
  TraceConversion conv;
  conv.length_scale = 0.5;  // blocks become 256 tokens = 512 characters at 2 chars/token
  conv.max_input_tokens = 400;
  std::vector<std::string> notes;
  auto reqs = trace_to_requests(*t, "mooncake", conv, synth, notes);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].input_tokens, 400);  // 550 capped
  EXPECT_EQ(reqs[1].input_tokens, 350);
  EXPECT_EQ(reqs[2].input_tokens, 150);
  EXPECT_EQ(reqs[0].prompt.size(), 800u);
  EXPECT_EQ(reqs[1].prompt.size(), 700u);
  // Both start with block 7: the first 512 characters agree, the next do not.
  EXPECT_EQ(reqs[0].prompt.substr(0, 512), reqs[1].prompt.substr(0, 512));
  EXPECT_NE(reqs[0].prompt.substr(512, 100), reqs[1].prompt.substr(512, 100));
  EXPECT_NE(reqs[0].prompt.substr(0, 100), reqs[2].prompt.substr(0, 100));
  EXPECT_EQ(reqs[0].max_tokens, 5);  // round(9 * 0.5) = 4.5 -> 5 (llround rounds half away from zero)
  // The scaling and the cap are both reported.
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("length scale 0.5"), std::string::npos) << all;
  EXPECT_NE(all.find("1 of 3 requests had their input capped at 400"), std::string::npos) << all;
}

}  // namespace
}  // namespace ladder::harness
