#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/sha256.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/flat_string_map.h"

namespace ladder::tokenizer {
namespace {

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // "▁"

// End-of-turn tokens by text, as llama.cpp recognises them.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",     "<|im_end|>", "<|end|>", "<|return|>",      "<|call|>",
    "<end_of_turn>",  "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
};

// Parses "<0xNN>" into NN.
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]);
  const int lo = hex(text[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, kSpaceEscape.size(), kSpaceEscape) == 0) {
      out.push_back(' ');
      pos += kSpaceEscape.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}


}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)), index_(vocab_), specials_(vocab_) {}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  LADDER_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file));
  return from_vocab(std::move(vocab));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(Vocab vocab) {
  if (vocab.tokens.empty()) return invalid_argument("tokenizer: the vocabulary is empty");
  if (vocab.scores.size() != vocab.tokens.size() || vocab.types.size() != vocab.tokens.size()) {
    return invalid_argument("tokenizer: tokens, scores and types differ in length");
  }
  std::unique_ptr<Tokenizer> tok(new Tokenizer(std::move(vocab)));
  LADDER_RETURN_IF_ERROR(tok->init());
  return tok;
}

Status Tokenizer::init() {
  const auto n = static_cast<size_t>(vocab_.n_vocab());
  if (vocab_.model == VocabModel::kSpm) {
    if (vocab_.pre != "default") {
      return unimplemented(fmt::format("tokenizer.ggml.pre '{}' is not supported for a 'llama' (SentencePiece) "
                                       "vocabulary (supported: default)",
                                       vocab_.pre));
    }
    LADDER_ASSIGN_OR_RETURN(SpmEncoder spm, SpmEncoder::create(vocab_, index_));
    spm_.emplace(std::move(spm));
  } else {
    LADDER_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(vocab_.pre));
    LADDER_ASSIGN_OR_RETURN(BpeEncoder bpe, BpeEncoder::create(vocab_, index_, pre.rules().ignore_merges));
    pre_tokenizer_.emplace(std::move(pre));
    bpe_.emplace(std::move(bpe));
  }

  pieces_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = vocab_.tokens[i];
    switch (vocab_.types[i]) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined: pieces_[i] = text; break;
      case TokenType::kUnused: break;
      case TokenType::kByte:
        if (auto b = parse_byte_token(text)) {
          pieces_[i] = std::string(1, static_cast<char>(*b));
          break;
        }
        [[fallthrough]];
      case TokenType::kNormal:
      case TokenType::kUndefined:
        if (vocab_.model == VocabModel::kSpm) {
          pieces_[i] = unescape_spaces(text);
        } else {
          byte_level_decode(text, &pieces_[i]);
        }
        break;
    }
  }

  is_eog_.assign(n, false);
  auto add_eog = [&](int32_t id) {
    if (id == kNoToken || is_eog_[static_cast<size_t>(id)]) return;
    is_eog_[static_cast<size_t>(id)] = true;
    eog_ids_.push_back(id);
  };
  add_eog(vocab_.special.eos);
  add_eog(vocab_.special.eot);
  add_eog(vocab_.special.eom);
  for (std::string_view t : kEndOfGenerationTexts) {
    const int32_t id = index_.find(t);
    if (id == kNoToken) continue;
    const TokenType type = vocab_.types[static_cast<size_t>(id)];
    if (type == TokenType::kControl || type == TokenType::kUserDefined) add_eog(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  for (int32_t id : eog_ids_) specials_.forbid_in_data(id);
  const SpecialIds& ids = vocab_.special;
  for (int32_t id : {ids.bos, ids.eos, ids.unknown, ids.separator, ids.padding, ids.eot, ids.eom}) {
    specials_.forbid_in_data(id);
  }

  if (vocab_.special.bos != kNoToken) bos_text_ = vocab_.tokens[static_cast<size_t>(vocab_.special.bos)];
  if (vocab_.special.eos != kNoToken) eos_text_ = vocab_.tokens[static_cast<size_t>(vocab_.special.eos)];

  Sha256 h;
  h.update_str("ladder-tokenizer-v1");
  h.update_str(vocab_.model_name);
  h.update_str(vocab_.pre);
  h.update_u64(n);
  for (size_t i = 0; i < n; ++i) {
    h.update_str(vocab_.tokens[i]);
    uint32_t score_bits = 0;
    std::memcpy(&score_bits, &vocab_.scores[i], sizeof(score_bits));
    h.update_u64(score_bits);
    h.update_u64(static_cast<uint64_t>(vocab_.types[i]));
  }
  h.update_u64(vocab_.merges.size());
  for (const std::string& m : vocab_.merges) h.update_str(m);
  const SpecialIds& s = vocab_.special;
  for (int32_t id : {s.bos, s.eos, s.unknown, s.separator, s.padding, s.eot, s.eom}) {
    h.update_u64(static_cast<uint64_t>(static_cast<int64_t>(id)));
  }
  h.update_u64((vocab_.add_bos ? 1u : 0u) | (vocab_.add_eos ? 2u : 0u) | (vocab_.add_space_prefix ? 4u : 0u));
  digest_ = to_hex(h.finish());
  return Status::ok();
}

void Tokenizer::encode_text(std::string_view text, bool space_prefix, std::vector<int32_t>* out) const {
  if (spm_) {
    std::string escaped;
    escaped.reserve(text.size() + text.size() / 2 + 3);
    if (space_prefix) escaped += kSpaceEscape;
    for (char c : text) {
      if (c == ' ') {
        escaped += kSpaceEscape;
      } else {
        escaped.push_back(c);
      }
    }
    spm_->encode(escaped, out);
    return;
  }
  std::vector<std::string_view> pieces;
  pre_tokenizer_->split(text, &pieces);
  // A repeated piece copies the ids it produced the first time: [begin, begin + count).
  FlatStringMap<std::pair<size_t, size_t>> seen(pieces.size() / 4);
  for (std::string_view piece : pieces) {
    if (const auto* range = seen.find(piece)) {
      const auto [begin, count] = *range;
      for (size_t i = 0; i < count; ++i) out->push_back((*out)[begin + i]);
      continue;
    }
    const size_t begin = out->size();
    bpe_->encode_piece(piece, out);
    seen.insert(piece, std::make_pair(begin, out->size() - begin));
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<Fragment> fragments;
  specials_.partition(text, parse_special, &fragments);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  encode_fragments(fragments, add_bos, &out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_rendered(const jinja::Text& rendered, bool add_bos) const {
  std::vector<Fragment> fragments;
  specials_.partition_marked(rendered, &fragments);
  const bool starts_with_bos =
      vocab_.special.bos != kNoToken && !fragments.empty() && fragments[0].token == vocab_.special.bos;
  std::vector<int32_t> out;
  out.reserve(rendered.size() / 3 + 2);
  encode_fragments(fragments, add_bos && !starts_with_bos, &out);
  return out;
}

void Tokenizer::encode_fragments(const std::vector<Fragment>& fragments, bool add_bos, std::vector<int32_t>* out) const {
  if (add_bos && vocab_.special.bos != kNoToken) out->push_back(vocab_.special.bos);
  // SentencePiece prefixes a space to text that starts the sequence or follows
  // a special token (llama.cpp's is_prev_special).
  bool after_special = true;
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out->push_back(f.token);
      after_special = true;
      continue;
    }
    encode_text(f.text, vocab_.add_space_prefix && after_special, out);
    after_special = false;
  }
}

void Tokenizer::append_piece(int32_t id, bool skip_special, DecodeState* state, std::string* out) const {
  if (id < 0 || id >= n_vocab()) return;
  const std::string& piece = pieces_[static_cast<size_t>(id)];
  switch (vocab_.types[static_cast<size_t>(id)]) {
    case TokenType::kUnused: return;
    case TokenType::kControl:
    case TokenType::kUnknown:
      if (!skip_special) out->append(piece);
      state->strip_leading_space = vocab_.add_space_prefix;
      return;
    case TokenType::kUserDefined:
      out->append(piece);
      state->strip_leading_space = vocab_.add_space_prefix;
      return;
    case TokenType::kNormal:
    case TokenType::kUndefined:
    case TokenType::kByte: {
      const bool strip = state->strip_leading_space && vocab_.types[static_cast<size_t>(id)] != TokenType::kByte &&
                         !piece.empty() && piece[0] == ' ';
      out->append(strip ? std::string_view(piece).substr(1) : std::string_view(piece));
      state->strip_leading_space = false;
      return;
    }
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  DecodeState state = initial_decode_state();
  for (int32_t id : ids) append_piece(id, skip_special, &state, &out);
  return out;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return vocab_.tokens[static_cast<size_t>(id)];
}

std::string_view Tokenizer::token_piece(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return pieces_[static_cast<size_t>(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUndefined;
  return vocab_.types[static_cast<size_t>(id)];
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenType t = token_type(id);
  return t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUnused;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return id >= 0 && id < n_vocab() && is_eog_[static_cast<size_t>(id)];
}

}  // namespace ladder::tokenizer
