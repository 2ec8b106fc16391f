// `ladder generate --kv-evict`: a budget holding the whole sequence keeps the
// golden ids, a small one generates past it, and nonsense is refused with a
// reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace ladder::testing {
namespace {

CommandResult generate(std::vector<std::string> extra, const std::string& n = "64") {
  std::vector<std::string> args = {
      ladder_bin(), "generate",         "--json", "-m", shared_path("models/stories260K.gguf"),
      "-p",         "Once upon a time", "-n",     n,    "--temp",
      "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_command(args);
}

TEST(KvEvictCli, WindowBudgetsOnGenerate) {
  auto whole = generate({"--kv-evict", "window", "--kv-budget", "80"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["tokens"].get<std::vector<int32_t>>(), kStoriesGolden64);
  for (const char* policy : {"window", "snap"}) {
    auto small = generate({"--kv-evict", policy, "--kv-budget", "48", "--kv-sinks", "0"}, "120");
    ASSERT_EQ(small.exit_code, 0) << small.err;
    EXPECT_EQ(nlohmann::json::parse(small.out)["tokens"].size(), 120u);
  }
}

TEST(KvEvictCli, NonsenseIsRefusedWithAReason) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--kv-evict", "window"}, "needs --kv-budget"},
      {{"--kv-evict", "window", "--kv-budget", "31"}, "must be >= 32"},
      {{"--kv-evict", "window", "--kv-budget", "32", "--kv-sinks", "17"}, "must be >= 48"},
      {{"--kv-budget", "64"}, "need --kv-evict window or snap"},
      {{"--kv-evict", "snap"}, "needs --kv-budget"},
      {{"--kv-evict", "lru", "--kv-budget", "64"}, "none, window or snap"},
      {{"--kv-evict", "window", "--kv-budget", "64", "--spec", "ngram"}, "speculative"},
  };
  for (const auto& [args, want] : cases) {
    auto r = generate(args);
    EXPECT_NE(r.exit_code, 0) << args[1];
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ladder::testing
