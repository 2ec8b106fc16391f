// Synthetic workload generators: sizes, session structure, the needle and
// reproducibility.
#include "harness/generators.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

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

}  // namespace
}  // namespace ladder::harness
