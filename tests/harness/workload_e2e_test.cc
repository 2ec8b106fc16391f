// `ladder workload long-context|rare --fill F --endpoint URL` against real
// servers of different vocabularies: prompts fill the stated fraction of the
// served context in the server's own tokens; and the acceptance test of the
// retrieval model: it continues rare-evidence prompts at 4096 context exactly
// as a copy rule computed here, independently, says it must.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/workload.h"
#include "ladder_server.h"
#include "test_support.h"

namespace ladder::harness {
namespace {

using nlohmann::json;
using testing::LadderServer;

ladder::testing::CommandResult workload(std::vector<std::string> args) {
  args.insert(args.begin(), {ladder::testing::ladder_bin(), "workload"});
  return ladder::testing::run_command(args);
}

// Fills `fill` of the server's context; returns the prompt tokens the server counted for each.
std::vector<int> fill_and_measure(const LadderServer& server, const std::string& kind, double fill, int max_tokens,
                                  const std::string& name) {
  const std::string dir = ladder::testing::temp_dir();
  const std::string wl = dir + "/" + name + ".jsonl";
  auto res = workload({kind, "-o", wl, "--fill", std::to_string(fill), "--endpoint", server.url(), "--requests", "6",
                       "--max-tokens", std::to_string(max_tokens)});
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.err.find("measured by the server"), std::string::npos) << res.err;
  res = testing::replay(server.url(), wl, dir + "/" + name + "-out", {"--quiet"});
  // A tiny model does not reproduce a rare entity: served, but not verified (exit 2).
  EXPECT_EQ(res.exit_code, kind == "rare" ? 2 : 0) << res.err << res.out;
  std::vector<int> tokens;
  for (const auto& r : testing::read_jsonl(dir + "/" + name + "-out/requests.jsonl")) {
    EXPECT_EQ(r["http_status"], 200) << r.dump();
    tokens.push_back(r["prompt_tokens"].get<int>());
    EXPECT_EQ(r["slice"], kind == "rare" ? "rare" : "long_context");
  }
  return tokens;
}

TEST(WorkloadE2E, LongPromptsFillTheServedContextOfAnyVocabulary) {
  // stories260K: a 512-piece SentencePiece vocabulary, context 128.
  LadderServer spm;
  ASSERT_FALSE(spm.url().empty());
  for (int t : fill_and_measure(spm, "long-context", 0.5, 16, "fill-spm")) {
    EXPECT_NEAR(t, 64, 6);
    EXPECT_LE(t + 16, 128);
  }
  for (int t : fill_and_measure(spm, "rare", 0.85, 8, "rare-spm")) EXPECT_LE(t + 8, 128);
  // A byte-level vocabulary (about one token per character), context 512.
  const std::string model = ladder::testing::temp_dir() + "/bytes.gguf";
  auto made = ladder::testing::run_command({ladder::testing::ladder_bin(), "synth", "--preset", "tiny", "--builtin-vocab",
                                            "-o", model});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  LadderServer bytes({}, model);
  ASSERT_FALSE(bytes.url().empty());
  for (int t : fill_and_measure(bytes, "long-context", 0.5, 16, "fill-bytes")) EXPECT_NEAR(t, 256, 13);
}

TEST(WorkloadE2E, OptionsThatCannotApplyAreErrors) {
  const std::string out = ladder::testing::temp_dir() + "/never.jsonl";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"long-context", "--fill", "0.5"}, "--fill needs the model's context"},
      {{"chat", "--fill", "0.5", "--context", "100"}, "--fill applies only to long-context and rare"},
      {{"chat", "--depth", "0.5"}, "--depth applies only to needle and rare"},
      {{"agent", "--turns", "3"}, "--turns applies only to chat and mixed"},
      {{"rare", "--fill", "0.5", "--endpoint", "http://127.0.0.1:1", "--chars-per-token", "3"}, "--chars-per-token does not apply"},
      {{"rare", "--fill", "0.9", "--context", "64", "--max-tokens", "32"}, "leaves no room for --max-tokens 32"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"-o", out});
    auto res = workload(args);
    EXPECT_EQ(res.exit_code, 1) << c.args[0] << " " << c.args[1];
    EXPECT_NE(res.err.find(c.says), std::string::npos) << res.err;
  }
}

// The next token is the one that followed the last earlier occurrence of the
// current token: what the retrieval model's heads compute, written out here.
std::vector<int64_t> induction(std::vector<int64_t> ids, size_t n) {
  std::vector<int64_t> out;
  for (size_t k = 0; k < n; ++k) {
    const int64_t current = ids.back();
    size_t j = ids.size() - 1;
    while (j > 0 && ids[j - 1] != current) --j;
    if (j == 0) break;
    out.push_back(ids[j]);  // the token after the earlier occurrence at j - 1
    ids.push_back(ids[j]);
  }
  return out;
}

TEST(WorkloadE2ESlow, RetrievalModelContinuesRareEvidenceAt4096) {
  const std::string dir = ladder::testing::temp_dir();
  const std::string model = dir + "/retrieval.gguf";
  auto made = ladder::testing::run_command({ladder::testing::ladder_bin(), "synth", "--preset", "retrieval", "-o", model});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  LadderServer server({}, model);
  ASSERT_FALSE(server.url().empty());
  const std::string wl = dir + "/rare-4096.jsonl";
  auto res = workload({"rare", "-o", wl, "--fill", "0.9", "--endpoint", server.url(), "--requests", "4",
                       "--max-tokens", "8"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  res = testing::replay(server.url(), wl, dir + "/rare-4096-out", {"--token-ids", "on", "--quiet"});
  ASSERT_EQ(res.exit_code, 0) << res.err << res.out;
  const json record = json::parse(ladder::testing::read_file(dir + "/rare-4096-out/record.json"));
  ASSERT_GE(record["server"]["models"]["data"][0]["max_model_len"].get<int>(), 4096);
  auto requests = parse_native_workload(ladder::testing::read_file(wl), true);
  ASSERT_TRUE(requests.is_ok());
  for (const auto& r : testing::read_jsonl(dir + "/rare-4096-out/requests.jsonl")) {
    EXPECT_GE(r["prompt_tokens"].get<int>(), 3600) << "the evidence must sit far back in a long context";
    EXPECT_TRUE(r["verified"].get<bool>()) << "the continuation must reproduce the entity: " << r.dump();
    // The prompt as the model's tokenizer reads it, continued by the copy rule.
    const std::string& prompt = requests->requests[r["index"].get<size_t>()].prompt;
    auto tok = ladder::testing::run_command({ladder::testing::ladder_bin(), "tokenize", "-m", model, "--json", prompt});
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    const auto ids = json::parse(tok.out)["ids"].get<std::vector<int64_t>>();
    const auto expected = induction(ids, 6);
    ASSERT_TRUE(r.contains("token_ids")) << "the server must send token ids (return_token_ids)";
    const auto got = r["token_ids"].get<std::vector<int64_t>>();
    ASSERT_GE(got.size(), expected.size());
    EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + static_cast<long>(expected.size())), expected);
  }
}

}  // namespace
}  // namespace ladder::harness
