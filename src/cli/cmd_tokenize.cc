// `ladder tokenize [-m FILE] [--no-bos] [--json] [--parse-special] [TEXT]`:
// the token ids a model's tokenizer gives a text (from stdin when TEXT is
// absent). Plain output is the ids separated by spaces; --json prints
// {"ids":[...],"pieces":[...]} where a piece is the text the token stands
// for, or the token's stored text when that is not valid UTF-8 on its own
// (a <0xNN> byte, part of a character).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "common/utf8.h"

namespace ladder::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool text_given = false;
  bool no_bos = false;
  bool json = false;
  bool parse_special = false;
};

int run_tokenize(const TokenizeOptions& opts) {
  const std::string path = resolve_model_path(opts.model);
  if (path.empty()) return 2;
  auto file = gguf::GgufFile::open(path);
  if (!file.is_ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().to_string().c_str());
    return 1;
  }
  auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "error: %s: %s\n", path.c_str(), tok.status().to_string().c_str());
    return 1;
  }
  std::string text = opts.text;
  if (!opts.text_given) text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  const bool add_bos = !opts.no_bos && (*tok)->add_bos_default();
  const std::vector<int32_t> ids = (*tok)->encode(text, add_bos, opts.parse_special);
  if (opts.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) {
      const std::string_view piece = (*tok)->token_piece(id);
      pieces.push_back(std::string(is_valid_utf8(piece) ? piece : (*tok)->token_text(id)));
    }
    const nlohmann::json out = {{"ids", ids}, {"pieces", pieces}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

CommandRegistrar register_tokenize{"tokenize", 30, [](CLI::App& app) -> CommandRun {
                       auto* cmd = app.add_subcommand("tokenize", "Print the token ids of a text (stdin when no TEXT)");
                       auto opts = std::make_shared<TokenizeOptions>();
                       cmd->add_option("-m,--model", opts->model,
                                       "The .gguf file (default: $LADDER_MODEL, then ../shared/models/stories260K.gguf)");
                       auto* text = cmd->add_option("text", opts->text, "The text to tokenize");
                       cmd->add_flag("--no-bos", opts->no_bos, "Do not add BOS even where the vocabulary asks for it");
                       cmd->add_flag("--json", opts->json, "Print {\"ids\":[...],\"pieces\":[...]}");
                       cmd->add_flag("--parse-special", opts->parse_special,
                                     "Recognise special tokens written in the text (e.g. <s>, <|im_end|>)");
                       return [opts, text] {
                         opts->text_given = text->count() > 0;
                         return run_tokenize(*opts);
                       };
                     }};

}  // namespace
}  // namespace ladder::cli
