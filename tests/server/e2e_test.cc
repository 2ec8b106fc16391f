// The official `openai` npm client drives `ladder serve` (tests/e2e): models,
// completions and chat, streaming and not, typed errors, abort, SIGTERM.
// node_modules comes from the committed package-lock.json via `npm ci` when
// it is missing (the npm registry must be reachable the first time).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_support.h"

namespace ladder::testing {
namespace {

TEST(E2E, OpenAiNodeClient) {
  const std::string dir = std::string(LADDER_TEST_SOURCE_DIR) + "/e2e";
  const std::string model = shared_path("models/stories260K.gguf");
  ASSERT_FALSE(model.empty());
  if (!std::filesystem::exists(dir + "/node_modules/openai/package.json")) {
    CommandResult ci = run_command({"npm", "ci", "--no-audit", "--no-fund", "--prefix", dir});
    ASSERT_EQ(ci.exit_code, 0) << "npm ci failed:\n" << ci.out << ci.err;
  }
  setenv("LADDER_MODEL", model.c_str(), 1);
  setenv("LADDER_BIN", ladder_bin().c_str(), 1);
  CommandResult r = run_command({"node", dir + "/openai_client.test.mjs"});
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.out << "\n" << r.err;
}

}  // namespace
}  // namespace ladder::testing
