// Tokenizer: text <-> token ids for the vocabulary of a GGUF file, matching
// llama.cpp token for token. Two models: "llama" (SentencePiece: scores, "▁"
// for space, a space prefix, <0xNN> byte fallback) and "gpt2" (byte-level BPE
// with ranked merges behind the pre-tokenizer that tokenizer.ggml.pre names).
// Immutable once built; encode/decode are thread-safe.
//
// What happens to bytes that are not valid UTF-8 in the input:
//   llama: each such byte becomes its <0xNN> token (or <unk> in a vocabulary
//          without byte tokens, which loses it); decode gives the bytes back.
//   gpt2:  each such byte is a pre-tokenizer piece of its own and becomes its
//          byte-level token; decode gives the bytes back. Some vocabularies
//          lack a byte's character (falcon: bytes 03 04 05 0B 11 13-17 19
//          1C-1E C0 C1 F2 F5-FF, valid text included): with no <unk> such a
//          byte is dropped, as llama.cpp does; deepseek-llm stores bytes C0 C1
//          F5-FF as user-defined tokens, which decode as their text ("ÿ").
// decode() returns the raw bytes the tokens stand for, which need not be valid
// UTF-8 (a cut sequence); IncrementalDetokenizer is the UTF-8-safe view.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_file.h"
#include "jinja/text.h"
#include "tokenizer/bpe_encoder.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_encoder.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace ladder::tokenizer {

// Carried from token to token while decoding: whether the next text piece
// still owes the space that SentencePiece's space prefix put in front of it.
struct DecodeState {
  bool strip_leading_space = false;
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::GgufFile& file);
  static Result<std::unique_ptr<Tokenizer>> from_vocab(Vocab vocab);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text`. add_bos prepends BOS (when the vocabulary has one);
  // EOS is never appended (see add_eos_default()). Special tokens written in
  // the text are recognised only with parse_special; otherwise their text is
  // tokenized like any other (user-defined tokens are always recognised).
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;

  // Token ids of a rendered chat prompt (ChatTemplate::render). Outside its
  // data ranges special tokens are recognised (the template's own markers);
  // where text touches data only user-defined tokens that neither end
  // generation nor stand for BOS/EOS/UNK/PAD/SEP are, so "</s>" or
  // "<|im_start|>" written in a message is tokenized as plain text. add_bos
  // prepends BOS unless the template already begins with it. With no data
  // ranges this is encode(text, add_bos, true).
  std::vector<int32_t> encode_rendered(const jinja::Text& rendered, bool add_bos) const;

  // The text of a sequence that starts at its beginning (after BOS or
  // nothing): the leading space SentencePiece's space prefix added is removed,
  // there and after every special token, so decode(encode(x)) == x.
  // skip_special drops control and unknown tokens; otherwise their text is
  // written. Ids outside the vocabulary contribute nothing.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;

  // Appends the bytes of one token to *out, continuing a decode in *state.
  void append_piece(int32_t id, bool skip_special, DecodeState* state, std::string* out) const;
  // The state at the start of a sequence.
  DecodeState initial_decode_state() const { return {vocab_.add_space_prefix}; }

  // The token's text as stored in the vocabulary ("" outside it).
  std::string_view token_text(int32_t id) const;
  // The bytes the token stands for (space for "▁", the byte of <0xNN>, raw
  // bytes of byte-level text; a special token's text). "" outside the vocabulary.
  std::string_view token_piece(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // Control, unknown or unused: not text a model writes.
  bool is_special(int32_t id) const;

  int32_t n_vocab() const { return vocab_.n_vocab(); }
  int32_t bos_id() const { return vocab_.special.bos; }
  int32_t eos_id() const { return vocab_.special.eos; }
  int32_t eot_id() const { return vocab_.special.eot; }
  int32_t eom_id() const { return vocab_.special.eom; }
  int32_t unknown_id() const { return vocab_.special.unknown; }
  int32_t padding_id() const { return vocab_.special.padding; }
  // Text of BOS / EOS for chat templates ("" when the vocabulary has none).
  const std::string& bos_text() const { return bos_text_; }
  const std::string& eos_text() const { return eos_text_; }

  // EOS, EOT, EOM, and the end-of-turn tokens models are known to emit
  // (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...)
  // when the vocabulary has them as control or user-defined tokens.
  bool is_end_of_generation(int32_t id) const;
  const std::vector<int32_t>& end_of_generation_ids() const { return eog_ids_; }

  bool add_bos_default() const { return vocab_.add_bos; }
  bool add_eos_default() const { return vocab_.add_eos; }
  bool add_space_prefix() const { return vocab_.add_space_prefix; }
  VocabModel model() const { return vocab_.model; }
  const std::string& pre() const { return vocab_.pre; }
  const Vocab& vocab() const { return vocab_; }

  // sha256 (lowercase hex) over everything that decides tokenization: model,
  // pre, tokens, scores, types, merges, special ids and flags.
  const std::string& digest() const { return digest_; }

 private:
  explicit Tokenizer(Vocab vocab);
  Status init();
  void encode_text(std::string_view text, bool space_prefix, std::vector<int32_t>* out) const;
  void encode_fragments(const std::vector<Fragment>& fragments, bool add_bos, std::vector<int32_t>* out) const;

  const Vocab vocab_;
  TokenIndex index_;
  SpecialTokenMatcher specials_;
  std::optional<SpmEncoder> spm_;
  std::optional<BpeEncoder> bpe_;
  std::optional<PreTokenizer> pre_tokenizer_;
  std::vector<std::string> pieces_;  // [n_vocab] see token_piece()
  std::vector<int32_t> eog_ids_;
  std::vector<bool> is_eog_;  // [n_vocab]
  std::string bos_text_;
  std::string eos_text_;
  std::string digest_;
};

}  // namespace ladder::tokenizer
