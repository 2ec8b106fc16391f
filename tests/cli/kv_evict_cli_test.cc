// `ladder generate --kv-evict`: a budget holding the whole sequence keeps the
// golden ids, a small one generates past it, and nonsense is refused with a
// reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace ladder::testing {
namespace {

const std::vector<int> kGolden = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401,
                                  396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433,
                                  426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388,
                                  426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267,
                                  414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

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
  EXPECT_EQ(nlohmann::json::parse(whole.out)["tokens"].get<std::vector<int>>(), kGolden);
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
