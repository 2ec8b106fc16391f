// Conformance of ladder::chat against python3-jinja2: every template in
// ../shared/chat-templates renders every conversation in
// chat_conversations.json (with and without the generation prompt) to the
// same bytes as tests/tokenizer/chat_reference.py, which renders with jinja2
// configured as Hugging Face transformers does. All reference renders happen
// in one python3 process (JSON in, JSON out).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/chat/chat_template.h"
#include "test_support.h"

namespace ladder::chat {
namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr std::time_t kFixedNow = 1767225600;  // 2026-01-01T00:00:00Z
const char* kBos = "<|begin_of_text|>";
const char* kEos = "<|end_of_text|>";

fs::path test_dir() { return fs::path(__FILE__).parent_path(); }

std::string reference_script() {
  if (const char* env = std::getenv("LADDER_CHAT_REFERENCE")) return env;
  return (test_dir() / "chat_reference.py").string();
}

struct Case {
  std::string id;
  std::string template_name;
  const ojson* conversation;
  bool add_generation_prompt;
};

// First line of a message, for readable failure output.
std::string first_diff(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  ours:   " + ojson(a.substr(from, 160)).dump() +
         "\n  jinja2: " + ojson(b.substr(from, 160)).dump();
}

TEST(ChatTemplateConformance, SharedTemplatesMatchJinja2) {
  std::string readme = testing::shared_path("chat-templates/README.md");
  ASSERT_FALSE(readme.empty());
  fs::path dir = fs::path(readme).parent_path();
  std::map<std::string, std::string> sources;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".jinja") sources[entry.path().stem().string()] = testing::read_file(entry.path().string());
  }
  ASSERT_GE(sources.size(), 50u) << "expected the shared chat templates in " << dir;

  ojson conversations = ojson::parse(testing::read_file((test_dir() / "chat_conversations.json").string()))["conversations"];
  ASSERT_GE(conversations.size(), 3u);

  ojson request;
  request["templates"] = ojson::object();
  for (const auto& [name, src] : sources) request["templates"][name] = src;
  request["cases"] = ojson::array();
  std::vector<Case> cases;
  for (const auto& [name, src] : sources) {
    for (const ojson& conv : conversations) {
      for (bool gen : {true, false}) {
        Case c{name + " / " + conv["name"].get<std::string>() + (gen ? " / gen" : " / no-gen"), name, &conv, gen};
        ojson rc;
        rc["id"] = c.id;
        rc["template"] = name;
        rc["messages"] = conv["messages"];
        if (conv.contains("tools")) rc["tools"] = conv["tools"];
        rc["add_generation_prompt"] = gen;
        rc["bos_token"] = kBos;
        rc["eos_token"] = kEos;
        rc["extra"] = conv.contains("extra") ? conv["extra"] : ojson::object();
        rc["now"] = kFixedNow;
        request["cases"].push_back(rc);
        cases.push_back(c);
      }
    }
  }

  testing::CommandResult ref = testing::run_command({"python3", reference_script()}, request.dump());
  ASSERT_EQ(ref.exit_code, 0) << "reference renderer failed:\n" << ref.err;
  ojson results = ojson::parse(ref.out)["results"];
  ASSERT_EQ(results.size(), cases.size());

  std::map<std::string, ChatTemplate> parsed;
  std::map<std::string, Status> parse_errors;
  for (const auto& [name, src] : sources) {
    Result<ChatTemplate> t = ChatTemplate::parse(src);
    if (t.is_ok()) parsed.emplace(name, std::move(t).value());
    else parse_errors.emplace(name, t.status());
  }

  struct Tally {
    int matched = 0, both_rejected = 0, mismatched = 0;
  };
  std::map<std::string, Tally> tally;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const ojson& r = results[i];
    ASSERT_EQ(r["id"].get<std::string>(), c.id);
    Tally& t = tally[c.template_name];
    Result<std::string> ours = internal_error("template did not parse");
    if (auto it = parsed.find(c.template_name); it != parsed.end()) {
      ChatRenderInput in;
      in.messages = (*c.conversation)["messages"];
      if (c.conversation->contains("tools")) in.tools = (*c.conversation)["tools"];
      in.add_generation_prompt = c.add_generation_prompt;
      in.bos_token = kBos;
      in.eos_token = kEos;
      in.now = kFixedNow;
      if (c.conversation->contains("extra")) in.extra = (*c.conversation)["extra"];
      ours = it->second.render(in);
    } else {
      ours = parse_errors.at(c.template_name);
    }
    if (!r["ok"].get<bool>()) {
      // jinja2 rejects this case: we must reject it too.
      std::printf("[ skipped  ] %s: jinja2 rejects it (%s); ours: %s\n", c.id.c_str(),
                  r["error"].get<std::string>().c_str(), ours.is_ok() ? "RENDERED" : ours.status().message().c_str());
      EXPECT_FALSE(ours.is_ok()) << c.id << ": jinja2 rejects it (" << r["error"].get<std::string>()
                                 << ") but we rendered it";
      t.both_rejected += !ours.is_ok();
      t.mismatched += ours.is_ok();
      continue;
    }
    const std::string expected = r["output"].get<std::string>();
    if (!ours.is_ok()) {
      ADD_FAILURE() << c.id << ": we failed where jinja2 renders: " << ours.status().to_string();
      ++t.mismatched;
      continue;
    }
    if (*ours != expected) {
      ADD_FAILURE() << c.id << ": output differs from jinja2; " << first_diff(*ours, expected);
      ++t.mismatched;
      continue;
    }
    ++t.matched;
  }
  int total_matched = 0, total_cases = 0;
  for (const auto& [name, t] : tally) {
    std::printf("[ template ] %-52s matched %2d  both-rejected %2d  mismatched %d\n", name.c_str(), t.matched,
                t.both_rejected, t.mismatched);
    total_matched += t.matched;
    total_cases += t.matched + t.both_rejected + t.mismatched;
  }
  std::printf("[ summary  ] %d templates, %d cases, %d matched byte-for-byte\n", static_cast<int>(tally.size()),
              total_cases, total_matched);
}

}  // namespace
}  // namespace ladder::chat
