#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <utility>

namespace ladder::tokenizer {
namespace {

// A special-token id: absent, or stored as -1 / 0xFFFFFFFF (what converters
// write for "none"), means kNoToken; anything else must be inside the vocabulary.
Result<int32_t> read_special_id(const gguf::GgufFile& file, const char* key, int32_t fallback, int32_t n_vocab) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return fallback;
  std::optional<int64_t> id = v->as_int();
  if (!id) {
    std::optional<uint64_t> u = v->as_uint();
    if (u && *u == 0xFFFFFFFFull) return kNoToken;
    return invalid_argument(fmt::format("{} must be an integer token id (found {})", key,
                                        gguf::value_type_name(v->type())));
  }
  if (*id == -1 || *id == 0xFFFFFFFFll) return kNoToken;
  if (*id < 0 || *id >= n_vocab) {
    return invalid_argument(fmt::format("{} = {} is outside the vocabulary (n_vocab {})", key, *id, n_vocab));
  }
  return static_cast<int32_t>(*id);
}

}  // namespace

Result<Vocab> load_vocab(const gguf::GgufFile& file) {
  Vocab vocab;
  if (file.find("tokenizer.ggml.model") == nullptr) {
    return invalid_argument("tokenizer.ggml.model is missing: the file carries no tokenizer");
  }
  LADDER_ASSIGN_OR_RETURN(vocab.model_name, file.get_string("tokenizer.ggml.model"));
  if (vocab.model_name == "llama") {
    vocab.model = VocabModel::kSpm;
  } else if (vocab.model_name == "gpt2") {
    vocab.model = VocabModel::kBpe;
  } else {
    return unimplemented(fmt::format(
        "tokenizer.ggml.model '{}' is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)",
        vocab.model_name));
  }
  LADDER_ASSIGN_OR_RETURN(vocab.pre, file.get_string_or("tokenizer.ggml.pre", "default"));
  if (vocab.pre.empty()) vocab.pre = "default";

  LADDER_ASSIGN_OR_RETURN(vocab.tokens, file.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = vocab.tokens.size();
  if (n == 0) return invalid_argument("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return invalid_argument("tokenizer.ggml.tokens has too many entries");
  const auto n_vocab = static_cast<int32_t>(n);

  if (file.find("tokenizer.ggml.scores") != nullptr) {
    LADDER_ASSIGN_OR_RETURN(vocab.scores, file.get_float_array("tokenizer.ggml.scores"));
    if (vocab.scores.size() != n) {
      return invalid_argument(fmt::format("tokenizer.ggml.scores has {} entries for {} tokens", vocab.scores.size(), n));
    }
  } else {
    vocab.scores.assign(n, 0.0f);
  }

  vocab.types.assign(n, TokenType::kNormal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    LADDER_ASSIGN_OR_RETURN(std::vector<int64_t> types, file.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return invalid_argument(fmt::format("tokenizer.ggml.token_type has {} entries for {} tokens", types.size(), n));
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > static_cast<int64_t>(TokenType::kByte)) {
        return invalid_argument(fmt::format("tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, types[i]));
      }
      vocab.types[i] = static_cast<TokenType>(types[i]);
    }
  }

  if (vocab.model == VocabModel::kBpe) {
    if (file.find("tokenizer.ggml.merges") == nullptr) {
      return invalid_argument("tokenizer.ggml.merges is missing: a 'gpt2' tokenizer needs its merges");
    }
    LADDER_ASSIGN_OR_RETURN(vocab.merges, file.get_string_array("tokenizer.ggml.merges"));
  }

  // Defaults follow llama.cpp for SentencePiece (<unk>=0, <s>=1, </s>=2); a BPE
  // vocabulary has no implied special tokens.
  const bool spm = vocab.model == VocabModel::kSpm;
  auto default_id = [&](int32_t id) { return spm && id < n_vocab ? id : kNoToken; };
  SpecialIds& s = vocab.special;
  LADDER_ASSIGN_OR_RETURN(s.bos, read_special_id(file, "tokenizer.ggml.bos_token_id", default_id(1), n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.eos, read_special_id(file, "tokenizer.ggml.eos_token_id", default_id(2), n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.unknown,
                          read_special_id(file, "tokenizer.ggml.unknown_token_id", default_id(0), n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.separator,
                          read_special_id(file, "tokenizer.ggml.seperator_token_id", kNoToken, n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.padding, read_special_id(file, "tokenizer.ggml.padding_token_id", kNoToken, n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.eot, read_special_id(file, "tokenizer.ggml.eot_token_id", kNoToken, n_vocab));
  LADDER_ASSIGN_OR_RETURN(s.eom, read_special_id(file, "tokenizer.ggml.eom_token_id", kNoToken, n_vocab));

  // llama.cpp: SentencePiece adds BOS and a space prefix by default; Llama 3's
  // BPE adds BOS. The file's flags, when present, win.
  const bool llama3_like = vocab.pre == "llama3" || vocab.pre == "llama-v3" || vocab.pre == "llama-bpe" ||
                           vocab.pre == "falcon3";
  // The implied default needs a BOS to add; an explicit flag without one is an error.
  const bool default_bos = (spm || llama3_like) && s.bos != kNoToken;
  LADDER_ASSIGN_OR_RETURN(vocab.add_bos, file.get_bool_or("tokenizer.ggml.add_bos_token", default_bos));
  LADDER_ASSIGN_OR_RETURN(vocab.add_eos, file.get_bool_or("tokenizer.ggml.add_eos_token", false));
  LADDER_ASSIGN_OR_RETURN(vocab.add_space_prefix, file.get_bool_or("tokenizer.ggml.add_space_prefix", spm));
  if (vocab.add_bos && s.bos == kNoToken) {
    return invalid_argument("tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token");
  }
  return vocab;
}

}  // namespace ladder::tokenizer
