// Conformance of ChatTemplate against python3-jinja2: every template in
// ../shared/chat-templates renders every conversation in
// chat_conversations.json (with and without the generation prompt) to the
// same bytes as tests/jinja/jinja2_reference.py, which renders with jinja2
// configured as Hugging Face transformers does. Conversations marked
// "openai" are OpenAI request bodies and go through
// ChatRenderInput::from_openai first (tool-call arguments as JSON strings,
// content as text parts); both renderers then get the same variables
// (ChatTemplate::context). All reference renders happen in one python3
// process (JSON in, JSON out).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer_test_util.h"

namespace ladder::tokenizer {
namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

using testing::kFixedNow;
const char* kBos = "<|begin_of_text|>";
const char* kEos = "<|end_of_text|>";

// Templates written for tool use, with the tool conversations each must
// render identically to jinja2 (and jinja2 must not reject them), so the
// check is not vacuous. Llama 3.x templates take one tool call per turn;
// firefunction wants its own `functions` and `datetime` variables.
const std::vector<const char*> kAllToolConversations = {"openai_tool_round_trip", "openai_tool_call_pending",
                                                        "openai_empty_arguments"};
const std::vector<const char*> kSingleCallConversations = {"openai_tool_call_pending", "openai_empty_arguments"};
const std::vector<std::pair<const char*, std::vector<const char*>>> kToolCases = {
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", kAllToolConversations},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", kAllToolConversations},
    {"meta-llama-Llama-3.1-8B-Instruct", kSingleCallConversations},
    {"meta-llama-Llama-3.2-3B-Instruct", kSingleCallConversations},
    {"mistralai-Mistral-Nemo-Instruct-2407", kAllToolConversations},
    {"Mistral-Small-3.2-24B-Instruct-2506", kAllToolConversations},
    {"Qwen-Qwen2.5-7B-Instruct", kAllToolConversations},
    {"fireworks-ai-llama-3-firefunction-v2", {"openai_firefunction_kwargs"}},
    {"meetkai-functionary-medium-v3.2", kAllToolConversations},
    {"Qwen3-Coder", kAllToolConversations},
};

fs::path test_dir() { return fs::path(LADDER_TEST_SOURCE_DIR) / "tokenizer"; }

std::string reference_script() {
  if (const char* env = std::getenv("LADDER_JINJA2_REFERENCE")) return env;
  return (test_dir().parent_path() / "jinja" / "jinja2_reference.py").string();
}

// The render input of a conversation: an OpenAI body through from_openai,
// or messages handed over as they are (Hugging Face style).
ChatRenderInput input_of(const ojson& conv, bool gen) {
  ChatRenderInput in;
  if (conv.value("openai", false)) {
    const ojson* tools = conv.contains("tools") ? &conv["tools"] : nullptr;
    Result<ChatRenderInput> r = ChatRenderInput::from_openai(conv["messages"], tools);
    EXPECT_TRUE(r.is_ok()) << conv["name"] << ": " << r.status().to_string();
    if (r.is_ok()) in = std::move(r).value();
  } else {
    in.messages = conv["messages"];
    if (conv.contains("tools")) in.tools = conv["tools"];
  }
  in.add_generation_prompt = gen;
  in.bos_token = kBos;
  in.eos_token = kEos;
  in.now = kFixedNow;
  if (conv.contains("kwargs")) in.kwargs = conv["kwargs"];
  return in;
}

// First difference, for readable failure output.
std::string first_diff(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  ours:   " + ojson(a.substr(from, 160)).dump() +
         "\n  jinja2: " + ojson(b.substr(from, 160)).dump();
}

struct Case {
  std::string id;
  std::string template_name;
  std::string conversation;
  ChatRenderInput input;
};

TEST(ChatTemplateConformance, SharedTemplatesMatchJinja2) {
  std::string readme = ladder::testing::shared_path("chat-templates/README.md");
  ASSERT_FALSE(readme.empty());
  fs::path dir = fs::path(readme).parent_path();
  std::map<std::string, std::string> sources;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".jinja") sources[entry.path().stem().string()] = ladder::testing::read_file(entry.path().string());
  }
  ASSERT_GE(sources.size(), 50u) << "expected the shared chat templates in " << dir;
  for (const auto& [name, convs] : kToolCases) ASSERT_TRUE(sources.count(name)) << name;

  ojson conversations = ojson::parse(ladder::testing::read_file((test_dir() / "chat_conversations.json").string()))["conversations"];
  ASSERT_GE(conversations.size(), 10u);

  std::map<std::string, ChatTemplate> parsed;
  std::map<std::string, Status> parse_errors;
  for (const auto& [name, src] : sources) {
    Result<ChatTemplate> t = ChatTemplate::parse(src);
    if (t.is_ok()) parsed.emplace(name, std::move(t).value());
    else parse_errors.emplace(name, t.status());
  }

  ojson request;
  request["templates"] = ojson::object();
  for (const auto& [name, src] : sources) request["templates"][name] = src;
  request["cases"] = ojson::array();
  std::vector<Case> cases;
  for (const auto& [name, src] : sources) {
    for (const ojson& conv : conversations) {
      for (bool gen : {true, false}) {
        Case c{name + " / " + conv["name"].get<std::string>() + (gen ? " / gen" : " / no-gen"), name,
               conv["name"].get<std::string>(), input_of(conv, gen)};
        // The variables the template sees; a template we cannot parse gets
        // the ChatML fallback's view (jinja2 must then reject it too).
        auto it = parsed.find(name);
        Result<ojson> context = (it != parsed.end() ? it->second : ChatTemplate::chatml()).context(c.input);
        ASSERT_TRUE(context.is_ok()) << c.id << ": " << context.status().to_string();
        request["cases"].push_back({{"id", c.id}, {"template", name}, {"context", *context}, {"now", kFixedNow}});
        cases.push_back(std::move(c));
      }
    }
  }

  ladder::testing::CommandResult ref = ladder::testing::run_command({"python3", reference_script()}, request.dump());
  ASSERT_EQ(ref.exit_code, 0) << "reference renderer failed:\n" << ref.err;
  ojson results = ojson::parse(ref.out)["results"];
  ASSERT_EQ(results.size(), cases.size());

  struct Tally {
    int matched = 0, both_rejected = 0, mismatched = 0;
  };
  std::map<std::string, Tally> tally;
  std::set<std::string> tool_cases_matched;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const ojson& r = results[i];
    ASSERT_EQ(r["id"].get<std::string>(), c.id);
    Tally& t = tally[c.template_name];
    Result<std::string> ours = internal_error("template did not parse");
    if (auto it = parsed.find(c.template_name); it != parsed.end()) {
      Result<jinja::Text> text = it->second.render(c.input);
      ours = text.is_ok() ? Result<std::string>(text->bytes()) : Result<std::string>(text.status());
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
    tool_cases_matched.insert(c.template_name + " / " + c.conversation);
  }
  for (const auto& [name, convs] : kToolCases) {
    for (const char* conv : convs) {
      EXPECT_TRUE(tool_cases_matched.count(std::string(name) + " / " + conv))
          << name << " does not render the tool conversation " << conv << " identically to jinja2";
    }
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
}  // namespace ladder::tokenizer
