// Synthetic workload generators: sizes, session structure, the needle and
// reproducibility.
#include "harness/generators.h"

#include <cmath>

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "harness/context_fill.h"
#include "harness/schedule.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

TextSynthesizer corpus_synth(double cpt = 4.0) {
  return TextSynthesizer(ladder::testing::read_file(ladder::testing::shared_path("text/war-and-peace.txt")), cpt);
}

TEST(Generators, ChatSessionsAreClosedLoopTurns) {
  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "chat";
  o.requests = 10;
  o.turns = 4;
  o.user_tokens = 10;
  auto r = generate_workload(o, synth);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 10u);  // sessions of 4, 4, 2
  std::map<std::string, int> turns;
  for (const auto& q : *r) {
    EXPECT_TRUE(q.is_chat());
    EXPECT_EQ(q.slice, "chat");
    EXPECT_EQ(q.turn, turns[q.session]++);
    if (q.turn > 0) {
      EXPECT_GT(q.think_s, 0);
    }
    EXPECT_EQ(q.messages.back().content.size(), 40u);  // 10 tokens x 4 chars
  }
  EXPECT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns["chat-2"], 2);

  o.completions = true;
  o.chat_system = "";
  auto c = generate_workload(o, synth);
  ASSERT_TRUE(c.is_ok());
  for (const auto& q : *c) {
    EXPECT_FALSE(q.is_chat());
    EXPECT_EQ(q.prompt.rfind("\nUser: ", 0), 0u) << q.prompt;
    EXPECT_EQ(q.prompt.size(), 7u + 40u + 11u);  // "\nUser: " + 40 characters + "\nAssistant:"
  }
}

TEST(Generators, AgentsShareTheirTenantsToolSpec) {
  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "agent";
  o.requests = 24;
  o.agent_calls = 6;
  o.tenants = 2;
  o.tool_s = 0.3;
  auto r = generate_workload(o, synth);
  ASSERT_TRUE(r.is_ok());
  std::map<std::string, std::set<std::string>> specs;  // tenant -> system prompts
  for (const auto& q : *r) {
    EXPECT_EQ(q.slice, "agent");
    if (q.turn == 0) {
      ASSERT_EQ(q.messages[0].role, "system");
      specs[q.tenant].insert(q.messages[0].content);
    } else {
      EXPECT_GE(q.think_s, 0.15);  // tool time: 0.3 x [0.5, 1.5]
      EXPECT_LE(q.think_s, 0.45);
    }
  }
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs["tenant-0"].size(), 1u);
  EXPECT_EQ(specs["tenant-1"].size(), 1u);
  EXPECT_NE(*specs["tenant-0"].begin(), *specs["tenant-1"].begin());
  EXPECT_EQ(arrival_unit_count(*r), 4u);
}

TEST(Generators, NeedleIsBuriedAtItsDepth) {
  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "needle";
  o.requests = 3;
  o.context_tokens = 500;
  o.depth = 0.25;
  auto r = generate_workload(o, synth);
  ASSERT_TRUE(r.is_ok());
  for (const auto& q : *r) {
    ASSERT_TRUE(q.expect.has_value());
    EXPECT_EQ(q.expect->text.size(), 6u);
    size_t at = q.prompt.find("The secret number of the vault is " + q.expect->text + ".");
    ASSERT_NE(at, std::string::npos);
    // 2000 characters of haystack; the fact starts at the first word break after 500.
    EXPECT_GE(at, 500u);
    EXPECT_LE(at, 520u);
  }
}

// Copy requests: the passage is in the prompt and the expected text is the
// passage's next words after what the prompt already repeats.
TEST(Generators, CopyRequestsAskForThePassageAgain) {
  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "copy";
  o.requests = 4;
  o.context_tokens = 200;
  for (bool completions : {true, false}) {
    o.completions = completions;
    auto r = generate_workload(o, synth);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    ASSERT_EQ(r->size(), 4u);
    for (const auto& q : *r) {
      EXPECT_EQ(q.slice, "copy");
      ASSERT_TRUE(q.expect.has_value());
      EXPECT_FALSE(q.expect->text.empty());
      EXPECT_LE(q.expect->text.size(), 32u);
      if (completions) {
        const size_t header = q.prompt.find("\n\nThe same text, copied exactly:\n");
        ASSERT_NE(header, std::string::npos);
        const std::string doc = q.prompt.substr(std::string("Original text:\n").size(),
                                                header - std::string("Original text:\n").size());
        const std::string given = q.prompt.substr(header + std::string("\n\nThe same text, copied exactly:\n").size());
        ASSERT_EQ(doc.rfind(given, 0), 0u);  // the prompt ends with the passage's first words
        EXPECT_NE(doc.find(q.expect->text, given.size()), std::string::npos);  // and expects the next ones
        EXPECT_GE(doc.size(), 700u);  // ~200 tokens at 4 characters each
      } else {
        ASSERT_TRUE(q.is_chat());
        const std::string& user = q.messages.back().content;
        EXPECT_NE(user.find(q.expect->text), std::string::npos);
      }
    }
  }
}

TEST(Generators, MixedIsReproducibleAndCoversThreeSlices) {
  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "mixed";
  o.requests = 20;
  o.seed = 9;
  auto a = generate_workload(o, synth);
  auto b = generate_workload(o, synth);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(write_native_workload(*a), write_native_workload(*b));
  o.seed = 10;
  EXPECT_NE(write_native_workload(*generate_workload(o, synth)), write_native_workload(*a));
  std::map<std::string, int> slices;
  for (const auto& q : *a) slices[q.slice]++;
  EXPECT_EQ(a->size(), 20u);
  EXPECT_EQ(slices["chat"], 8);
  EXPECT_EQ(slices["agent"], 6);
  EXPECT_EQ(slices["long_context"], 6);
  o.kind = "nope";
  EXPECT_FALSE(generate_workload(o, synth).is_ok());
}

// A copy rule on characters (the next character is the one that followed
// the last earlier occurrence of the current one), applied to the prompt.
std::string char_induction(const std::string& prompt, size_t n) {
  std::string seq = prompt, out;
  for (size_t k = 0; k < n; ++k) {
    const size_t last = seq.size() - 1;
    size_t j = seq.rfind(seq[last], last - 1);
    if (j == std::string::npos) break;
    out += seq[j + 1];
    seq += seq[j + 1];
  }
  return out;
}

TEST(Generators, RareEntityIsUniqueAndCopyable) {
  const std::string e = rare_entity(5);
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(rare_entity(5), e);
  EXPECT_NE(rare_entity(6), e);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(std::string(kRareSymbols).find(e[i]) != std::string::npos, i % 2 == 0) << e;  // symbol, digit, ...
    EXPECT_EQ(std::string(kRareDigits).find(e[i]) != std::string::npos, i % 2 == 1) << e;
    EXPECT_EQ(e.find(e[i]), i) << "repeated character in " << e;
  }
  EXPECT_EQ(strip_rare_characters("In 1812, 50% of  #them"), "In , of them");

  auto synth = corpus_synth();
  GeneratorOptions o;
  o.kind = "rare";
  o.requests = 4;
  o.context_tokens = 1000;
  o.depth = 0.1;
  auto r = generate_workload(o, synth);
  ASSERT_TRUE(r.is_ok());
  for (const auto& q : *r) {
    EXPECT_EQ(q.slice, "rare");
    ASSERT_TRUE(q.expect.has_value());
    const std::string rest = q.expect->text;
    ASSERT_EQ(rest.size(), 6u);
    const size_t intro = q.prompt.find("The access code of the vault is ");
    ASSERT_NE(intro, std::string::npos);
    const std::string entity = q.prompt.substr(intro + 32, 8);
    EXPECT_EQ(entity.substr(2), rest);
    // Early, and the prompt ends by starting to repeat it.
    EXPECT_NEAR(static_cast<double>(intro) / static_cast<double>(q.prompt.size()), 0.1, 0.03);
    EXPECT_EQ(q.prompt.substr(q.prompt.size() - 2), entity.substr(0, 2));
    EXPECT_NEAR(static_cast<double>(q.prompt.size()), 4000.0, 8.0);  // 1000 tokens x 4 characters
    // No digit or rare symbol anywhere else: the entity's 8 and the cue's 2.
    size_t rare = 0;
    for (char c : q.prompt) rare += std::string(kRareDigits).find(c) != std::string::npos ||
                                    std::string(kRareSymbols).find(c) != std::string::npos;
    EXPECT_EQ(rare, 10u);
    // So copying from the last earlier occurrence reproduces the rest.
    EXPECT_EQ(char_induction(q.prompt, 6), rest);
  }
}

TEST(Generators, LongPromptsFillAFractionOfTheContext) {
  GeneratorOptions o;
  o.kind = "long-context";
  o.max_tokens = 32;
  EXPECT_EQ(*long_prompt_tokens(o), 320);  // --context-tokens without --fill
  o.fill = 0.5;
  EXPECT_FALSE(long_prompt_tokens(o).is_ok());  // no context known
  o.context = 4096;
  EXPECT_EQ(*long_prompt_tokens(o), 2048);
  o.fill = 0.995;  // 4075 + 32 > 4096
  auto full = long_prompt_tokens(o);
  ASSERT_FALSE(full.is_ok());
  EXPECT_NE(full.status().message().find("no room for --max-tokens 32"), std::string::npos);
  o.fill = 1.5;
  EXPECT_FALSE(long_prompt_tokens(o).is_ok());

  auto synth = corpus_synth(3.0);
  o.fill = 0.25;
  o.requests = 2;
  auto r = generate_workload(o, synth);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (const auto& q : *r) EXPECT_EQ(q.prompt.size(), 1024u * 3u);  // 1024 tokens at 3 characters, question included
}

TEST(Generators, FittedToAServedTokenizer) {
  // A tokenizer of 3.1 characters per token plus 40 tokens of template,
  // which the generator does not know: the probe's ratio is off, and the
  // rounds must correct it.
  auto count = [&](const std::string& prompt) -> Result<int64_t> {
    return static_cast<int64_t>(std::ceil(static_cast<double>(prompt.size()) / 3.1)) + 40;
  };
  GeneratorOptions o;
  o.kind = "rare";
  o.requests = 3;
  o.fill = 0.8;
  o.context = 2048;
  o.max_tokens = 16;
  ContextFit fit;
  auto r = generate_fitted(o, ladder::testing::read_file(ladder::testing::shared_path("text/war-and-peace.txt")), 4.0,
                           count, &fit);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(fit.target_tokens, 1638);
  ASSERT_EQ(r->size(), 3u);
  for (const auto& q : *r) EXPECT_NEAR(static_cast<double>(*count(q.prompt)), 1638.0, 0.03 * 1638);
  EXPECT_NEAR(fit.mean_tokens, 1638.0, 0.02 * 1638);
  EXPECT_LE(fit.max_tokens, 2048 - 16);
  EXPECT_GE(fit.rounds, 2);
  // (1638 - 40) tokens of text in 1638 x ratio characters at 3.1 each.
  EXPECT_NEAR(fit.chars_per_token, 3.1 * (1638.0 - 40.0) / 1638.0, 0.05);
  // Prompts that cannot be made to fit (a server that counts every prompt as
  // 100 tokens, in a 64-token context) are refused, not overfilled.
  o.context = 64;
  o.fill = 0.5;
  o.max_tokens = 4;
  auto tight = generate_fitted(o, "some words ", 4.0, [](const std::string&) -> Result<int64_t> { return 100; }, &fit);
  ASSERT_FALSE(tight.is_ok());
  EXPECT_NE(tight.status().message().find("lower --fill"), std::string::npos) << tight.status().message();
}

}  // namespace
}  // namespace ladder::harness
