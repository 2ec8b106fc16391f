#include "model/model_bundle.h"

namespace ladder::model {

Result<ModelBundle> ModelBundle::load(const std::string& path, int64_t serving_context) {
  ModelBundle b;
  auto file = gguf::GgufFile::open(path);
  if (!file.is_ok()) return file.status();  // names the path already
  b.file = std::make_unique<gguf::GgufFile>(std::move(file).value());
  auto tok = tokenizer::Tokenizer::from_gguf(*b.file);
  if (!tok.is_ok()) return Status(tok.status().code(), path + ": tokenizer: " + tok.status().message());
  b.tokenizer = std::move(tok).value();
  auto m = LlamaModel::load(*b.file, serving_context);
  if (!m.is_ok()) return Status(m.status().code(), path + ": " + m.status().message());
  b.model = std::move(m).value();
  if (b.tokenizer->n_vocab() != b.model->config().n_vocab) {
    return invalid_argument(path + ": the tokenizer has " + std::to_string(b.tokenizer->n_vocab()) +
                            " tokens but the model's vocabulary is " + std::to_string(b.model->config().n_vocab));
  }
  return b;
}

}  // namespace ladder::model
