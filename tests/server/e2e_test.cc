// The official `openai` npm client drives `ladder serve`, and `ladder route`
// with a prefill and a decode worker, through one suite (tests/e2e): models,
// completions and chat, streaming and not, JSON mode, tools, typed errors,
// token counters, embeddings, abort, SIGTERM. Every case passes on both.
// node_modules comes from the committed package-lock.json via `npm ci` when
// it is missing (the npm registry must be reachable the first time).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "http_test_client.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

namespace ladder::testing {
namespace {

class E2E : public ::testing::TestWithParam<const char*> {};

TEST_P(E2E, OpenAiNodeClient) {
  const std::string dir = std::string(LADDER_TEST_SOURCE_DIR) + "/e2e";
  const std::string model = shared_path("models/stories260K.gguf");
  ASSERT_FALSE(model.empty());
  if (!std::filesystem::exists(dir + "/node_modules/openai/package.json")) {
    CommandResult ci = run_command({"npm", "ci", "--no-audit", "--no-fund", "--prefix", dir});
    ASSERT_EQ(ci.exit_code, 0) << "npm ci failed:\n" << ci.out << ci.err;
  }
  setenv("LADDER_MODEL", model.c_str(), 1);
  setenv("LADDER_BIN", ladder_bin().c_str(), 1);
  setenv("LADDER_E2E_TARGET", GetParam(), 1);
  CommandResult r = run_command({"node", dir + "/openai_client.test.mjs"});
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.out << "\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(ServeAndRoute, E2E, ::testing::Values("serve", "route"));

}  // namespace
}  // namespace ladder::testing

namespace ladder::testing {
namespace {

// `ladder chat` renders each turn through the model's template and answers as
// the server does: greedy replies equal /v1/chat/completions for the same
// conversation, turn after turn; /reset starts over.
TEST(CliChat, RepliesAsTheServerDoesTurnAfterTurn) {
  const std::string model = shared_path("models/stories260K.gguf");
  // stories260K's context is 128 tokens: short turns.
  CommandResult chat = run_command({ladder_bin(), "chat", "-m", model, "--temp", "0", "-n", "6"},
                                   "Hey\nMore\n/reset\nHey\n");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  ServerProcess srv({"-m", model});
  ASSERT_TRUE(srv.ok());
  nlohmann::json messages = {{{"role", "user"}, {"content", "Hey"}}};
  auto ask = [&] {
    nlohmann::json body = {{"messages", messages}, {"temperature", 0}, {"max_tokens", 6}};
    HttpReply r = http_request(srv.port(), "POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    nlohmann::json doc = nlohmann::json::parse(r.body);
    std::string text = doc["choices"][0]["message"]["content"];
    if (doc["choices"][0]["finish_reason"] == "length") text += " [cut at the token limit]";
    return text;
  };
  const std::string first = ask();
  messages.push_back({{"role", "assistant"}, {"content", first.substr(0, first.find(" [cut at"))}});
  messages.push_back({{"role", "user"}, {"content", "More"}});
  const std::string second = ask();
  const std::string expected = first + "\n" + second + "\n(conversation cleared)\n" + first + "\n";
  EXPECT_EQ(chat.out, expected);
}

}  // namespace
}  // namespace ladder::testing
