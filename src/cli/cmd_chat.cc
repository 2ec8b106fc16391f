// `ladder chat`: an interactive conversation with a model in the terminal,
// through the model's own chat template, the reply streamed as it is
// generated. Lines starting with '/' are commands (/reset, /exit); end of
// input ends the chat.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/engine.h"
#include "model/model_bundle.h"
#include "tokenizer/chat_template.h"

namespace ladder::cli {
namespace {

struct ChatArgs {
  std::string model;
  std::string system;
  int max_tokens = 0;  // 0: what the context allows
  float temp = 0.8f;
  float top_p = 0.95f;
  uint64_t seed = 0;
  bool seed_given = false;
  int threads = 0;
  int64_t context = 0;
  TensorType kv_dtype = TensorType::kF16;
  std::string chat_template;  // a Jinja file or text instead of the model's
};

int run_chat(const ChatArgs& a) {
  std::string path;
  int load_error = 0;
  auto loaded = load_model_or_report(a.model, &path, &load_error);
  if (!loaded) return load_error;
  const tokenizer::Tokenizer& tok = *loaded->tokenizer;
  auto tmpl = tokenizer::chat_template_for(*loaded->file, a.chat_template);
  if (!tmpl.is_ok()) {
    std::fprintf(stderr, "error: %s: %s\n", path.c_str(), tmpl.status().message().c_str());
    return 1;
  }
  engine::EngineConfig ec;
  ec.n_threads = a.threads;
  ec.kv_dtype = a.kv_dtype;
  ec.model_digest = loaded->file->digest();
  ec.tokenizer_digest = tok.digest();
  ec.tokenizer = &tok;
  ec.scheduler.context_length = a.context;
  auto created = engine::Engine::create(*loaded->model, ec);
  if (!created.is_ok()) {
    std::fprintf(stderr, "error: %s\n", created.status().message().c_str());
    return 1;
  }
  engine::Engine& eng = **created;
  const bool tty = isatty(fileno(stdin)) != 0;
  std::fprintf(stderr, "chat with %s (context %lld tokens); /reset starts over, /exit or end of input quits\n",
               path.c_str(), static_cast<long long>(eng.context_length()));

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  auto reset = [&] {
    messages = nlohmann::ordered_json::array();
    if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  };
  reset();
  uint64_t turn = 0;
  std::string line;
  while (true) {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      reset();
      std::fputs("(conversation cleared)\n", stdout);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    auto input = tokenizer::ChatRenderInput::from_openai(messages);
    if (!input.is_ok()) {
      std::fprintf(stderr, "error: %s\n", input.status().message().c_str());
      messages.erase(messages.size() - 1);
      continue;
    }
    input->bos_token = tok.bos_text();
    input->eos_token = tok.eos_text();
    auto rendered = tmpl->render(*input);
    if (!rendered.is_ok()) {
      std::fprintf(stderr, "error: the chat template failed: %s\n", rendered.status().message().c_str());
      messages.erase(messages.size() - 1);
      continue;
    }
    engine::Request r;
    r.prompt = tok.encode_rendered(*rendered, tok.add_bos_default());
    r.sampling.temperature = a.temp;
    r.sampling.top_p = a.top_p;
    if (a.seed_given) r.sampling.seed = a.seed + turn;
    r.stop.max_tokens = a.max_tokens;
    for (int32_t id : tok.end_of_generation_ids()) r.stop.stop_token_ids.insert(id);
    auto sub = eng.submit(std::move(r));
    if (!sub.is_ok()) {
      // Over the context: the conversation no longer fits.
      std::fprintf(stderr, "error: %s; /reset to start over\n", sub.status().message().c_str());
      messages.erase(messages.size() - 1);
      continue;
    }
    ++turn;
    std::string reply;
    while (auto ev = sub->stream->next()) {
      reply += ev->text;
      std::fputs(ev->text.c_str(), stdout);
      std::fflush(stdout);
      if (ev->kind == engine::StreamEvent::Kind::kFinished) {
        if (ev->finish == engine::FinishReason::kError) {
          std::fprintf(stderr, "\nerror: %s\n", ev->status.message().c_str());
        } else if (ev->finish == engine::FinishReason::kLength) {
          std::fputs(" [cut at the token limit]", stdout);
        }
      }
    }
    std::fputs("\n", stdout);
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  return 0;
}

CommandRegistrar register_chat{"chat", 46, [](CLI::App& app) -> CommandRun {
  auto a = std::make_shared<ChatArgs>();
  auto* cmd = app.add_subcommand(
      "chat", "Chat with a model in the terminal through its chat template, replies streamed (/reset, /exit)");
  cmd->add_option("-m,--model", a->model, "GGUF model (default: $LADDER_MODEL, then ../shared/models/stories260K.gguf)");
  cmd->add_option("--system", a->system, "A system message that opens the conversation");
  cmd->add_option("--chat-template", a->chat_template,
                  "A Jinja chat template to use instead of the model's own (a file, or the template text)");
  cmd->add_option("-n,--max-tokens", a->max_tokens, "Tokens per reply at most (default: what the context allows)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--temp", a->temp, "Temperature; 0 = greedy")->capture_default_str()->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", a->seed, "Sampling seed (turn i uses seed + i)")
      ->each([a](const std::string&) { a->seed_given = true; });
  cmd->add_option("-c,--ctx-size", a->context, "Context length in tokens (default: the model's)");
  cmd->add_option("-t,--threads", a->threads, "Threads (default: all cores)");
  add_kv_dtype_option(cmd, &a->kv_dtype);
  return [a] { return run_chat(*a); };
}};

}  // namespace
}  // namespace ladder::cli
