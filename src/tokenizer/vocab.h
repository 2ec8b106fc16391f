// Vocab: the tokenizer half of a GGUF file (tokenizer.ggml.*), validated.
// Plain data; the encoders (spm_encoder.h, bpe_encoder.h) build their lookup
// structures from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_file.h"

namespace ladder::tokenizer {

inline constexpr int32_t kNoToken = -1;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type); never renumber.
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class VocabModel {
  kSpm,  // "llama": SentencePiece pieces with scores, "▁" for space, <0xNN> byte fallback
  kBpe,  // "gpt2": byte-level BPE with ranked merges and a regex pre-tokenizer
};

struct SpecialIds {
  int32_t bos = kNoToken;
  int32_t eos = kNoToken;
  int32_t unknown = kNoToken;
  int32_t separator = kNoToken;
  int32_t padding = kNoToken;
  int32_t eot = kNoToken;
  int32_t eom = kNoToken;
};

struct Vocab {
  VocabModel model = VocabModel::kSpm;
  std::string model_name;  // tokenizer.ggml.model as written
  std::string pre;         // tokenizer.ggml.pre ("default" when absent)
  std::vector<std::string> tokens;  // [n_vocab] token text as stored
  std::vector<float> scores;        // [n_vocab] (zeros when absent)
  std::vector<TokenType> types;     // [n_vocab] (kNormal when absent)
  std::vector<std::string> merges;  // [n_merges] "left right", rank = index (BPE only)
  SpecialIds special;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: a space is prepended to text that starts a sequence

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
};

// Reads and validates tokenizer.ggml.*: kUnimplemented for a model type Ladder
// does not support (naming it), kInvalidArgument naming the key for a missing
// or inconsistent field (array lengths, special ids outside the vocabulary).
Result<Vocab> load_vocab(const gguf::GgufFile& file);

}  // namespace ladder::tokenizer
