// ModelBundle: everything one served model needs, loaded from one GGUF file:
// the mapped file, its tokenizer and the bound weights.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"

namespace ladder::model {

struct ModelBundle {
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<LlamaModel> model;

  // Errors name the file and what is wrong with it; a tokenizer whose size
  // differs from the model's vocabulary is an error. serving_context: as
  // LlamaModel::load (0: the model's own context).
  static Result<ModelBundle> load(const std::string& path, int64_t serving_context = 0);
};

}  // namespace ladder::model
