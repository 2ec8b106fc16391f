// decode(encode(x)) == x on seeded random text (ASCII, Latin, Cyrillic, CJK,
// emoji, combining marks, ZWJ sequences, whitespace runs) and on arbitrary
// bytes, for every vocabulary; and the streaming detokenizer gives the same
// text in UTF-8-valid chunks.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include <unordered_map>

#include "tokenizer/byte_level.h"
#include "tokenizer/incremental_detokenizer.h"
#include "common/utf8.h"
#include "tokenizer_test_util.h"

namespace ladder::tokenizer {
namespace {

using testing::load_tokenizer;

// Code point ranges the generator draws from, each equally likely.
constexpr std::pair<uint32_t, uint32_t> kRanges[] = {
    {'a', 'z'},         {'A', 'Z'},         {'0', '9'},         {' ', ' '},         {'\n', '\n'},
    {'\t', '\t'},       {'!', '/'},         {0xC0, 0xFF},       {0x0400, 0x04FF},   {0x4E00, 0x9FFF},
    {0x1F600, 0x1F64F}, {0x0300, 0x036F},   {0x200D, 0x200D},   {0x3040, 0x30FF},   {0xAC00, 0xD7A3},
    {0x0600, 0x06FF},   {0x2000, 0x200A},   {0x1F300, 0x1F5FF}, {0xFE0F, 0xFE0F},   {0x0E00, 0x0E7F},
};

std::string random_text(std::mt19937& rng, size_t max_chars) {
  std::uniform_int_distribution<size_t> len_dist(0, max_chars);
  std::uniform_int_distribution<size_t> range_dist(0, std::size(kRanges) - 1);
  const size_t n = len_dist(rng);
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const auto [lo, hi] = kRanges[range_dist(rng)];
    append_utf8(std::uniform_int_distribution<uint32_t>(lo, hi)(rng), &s);
  }
  return s;
}

std::string random_bytes(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len_dist(0, max_len);
  std::uniform_int_distribution<int> byte_dist(0, 255);
  std::string s(len_dist(rng), '\0');
  for (char& c : s) c = static_cast<char>(byte_dist(rng));
  return s;
}

// Streams ids through an IncrementalDetokenizer, checking every chunk.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDetokenizer detok(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = detok.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk)) << "chunk after id " << id << " is not valid UTF-8";
    all += chunk;
  }
  const std::string tail = detok.flush();
  EXPECT_TRUE(is_valid_utf8(tail));
  return all + tail;
}

class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, RandomUnicodeText) {
  auto tok = load_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(1234);
  for (int i = 0; i < 100; ++i) {
    const std::string text = random_text(rng, 40);
    const auto ids = tok->encode(text, /*add_bos=*/true, /*parse_special=*/false);
    ASSERT_EQ(tok->decode(ids), text) << GetParam() << " case " << i;
    ASSERT_EQ(stream(*tok, ids, true), text) << GetParam() << " case " << i;
  }
}

// What a vocabulary can give back for arbitrary bytes, read off its token
// list: SentencePiece keeps every byte (<0xNN> tokens). Byte-level BPE keeps a
// byte whose byte-level character is a normal token; where that character is
// a user-defined token (deepseek-llm: bytes C0 C1 F5..FF) decoding gives the
// token's text; where it is no token at all (falcon: 03 04 05 0B 11 13..17 19
// 1C..1E C0 C1 F2 F5..FF) the byte is dropped, as llama.cpp drops it, since
// the vocabulary has no <unk>.
// [256] what each byte decodes back to.
std::array<std::string, 256> representable_bytes(const Tokenizer& tok) {
  std::array<std::string, 256> out;
  for (int b = 0; b < 256; ++b) out[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
  if (tok.model() == VocabModel::kSpm) return out;
  std::unordered_map<std::string, size_t> index;
  const auto& tokens = tok.vocab().tokens;
  for (size_t i = 0; i < tokens.size(); ++i) index.emplace(tokens[i], i);
  for (int b = 0; b < 256; ++b) {
    auto it = index.find(byte_level_char(static_cast<uint8_t>(b)));
    std::string& o = out[static_cast<size_t>(b)];
    if (it == index.end()) {
      o.clear();
    } else if (tok.vocab().types[it->second] == TokenType::kUserDefined) {
      o = tokens[it->second];
    }
  }
  return out;
}

TEST_P(RoundTrip, ArbitraryBytes) {
  auto tok = load_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto table = representable_bytes(*tok);
  std::mt19937 rng(99);
  for (int i = 0; i < 60; ++i) {
    const std::string bytes = random_bytes(rng, 24);
    const auto ids = tok->encode(bytes, false, false);
    std::string expected;
    for (char c : bytes) expected += table[static_cast<uint8_t>(c)];
    ASSERT_EQ(tok->decode(ids), expected) << GetParam() << " case " << i;
    ASSERT_EQ(stream(*tok, ids, true), sanitize_utf8(expected)) << GetParam() << " case " << i;
  }
}

TEST(RoundTripBytes, Gpt2AndLlamaKeepEveryByte) {
  for (const char* rel : {"tokenizers/ggml-vocab-gpt-2.gguf", "tokenizers/ggml-vocab-llama-spm.gguf"}) {
    auto tok = load_tokenizer(rel);
    ASSERT_NE(tok, nullptr);
    std::string all;
    for (int b = 255; b >= 0; --b) all.push_back(static_cast<char>(b));
    EXPECT_EQ(tok->decode(tok->encode(all, false, false)), all) << rel;
  }
}

TEST_P(RoundTrip, StreamMatchesDecodeForModelLikeSequences) {
  // Arbitrary in-vocabulary ids, specials included: whatever decode makes of
  // them, the stream must give the same text (sanitized) chunk by chunk.
  auto tok = load_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id_dist(0, tok->n_vocab() - 1);
  for (int i = 0; i < 60; ++i) {
    std::vector<int32_t> ids(static_cast<size_t>(std::uniform_int_distribution<int>(0, 30)(rng)));
    for (int32_t& id : ids) id = id_dist(rng);
    for (bool skip : {true, false}) {
      ASSERT_EQ(stream(*tok, ids, skip), sanitize_utf8(tok->decode(ids, skip))) << GetParam() << " case " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, RoundTrip,
                         ::testing::Values("tokenizers/ggml-vocab-llama-spm.gguf", "tokenizers/ggml-vocab-gpt-2.gguf",
                                           "tokenizers/ggml-vocab-deepseek-llm.gguf",
                                           "tokenizers/ggml-vocab-falcon.gguf", "models/stories260K.gguf"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           name = name.substr(name.find('/') + 1);
                           std::string out;
                           for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return out;
                         });

TEST(Detokenizer, ByteFallbackCharacterIsHeldUntilComplete) {
  auto tok = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  // " this is 🦙.cpp" (golden ids): ▁ this is ▁ <0xF0> <0x9F> <0xA6> <0x99> . cpp
  const std::vector<int32_t> ids = {29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223};
  IncrementalDetokenizer detok(*tok);
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(detok.push(id));
  const std::vector<std::string> expected = {"", " this", " is", " ", "", "", "", "\xF0\x9F\xA6\x99", ".", "cpp"};
  EXPECT_EQ(chunks, expected);
  EXPECT_EQ(detok.flush(), "");
  EXPECT_EQ(tok->decode(ids), " this is \xF0\x9F\xA6\x99.cpp");
}

TEST(Detokenizer, LeadingSpaceOnlyAtSequenceStart) {
  auto tok = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  // [<s>, ▁Hello, ▁world]: from the start the space prefix goes; as a
  // continuation after a prompt both spaces are text.
  IncrementalDetokenizer from_start(*tok);
  EXPECT_EQ(from_start.push(1), "");
  EXPECT_EQ(from_start.push(15043), "Hello");
  EXPECT_EQ(from_start.push(3186), " world");
  IncrementalDetokenizer continuation(*tok, true, /*at_sequence_start=*/false);
  EXPECT_EQ(continuation.push(15043), " Hello");
  EXPECT_EQ(continuation.push(3186), " world");
  // Byte-level BPE has no space prefix: a leading space is always text.
  auto gpt2 = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(gpt2, nullptr);
  IncrementalDetokenizer g(*gpt2);
  EXPECT_EQ(g.push(18435), " Hello");  // " Hello world" is 18435 995 (golden vectors)
  EXPECT_EQ(g.push(995), " world");
}

TEST(Detokenizer, CutCharacterAtTheEndBecomesReplacement) {
  auto tok = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push(243), "");  // <0xF0>
  EXPECT_EQ(detok.push(162), "");  // <0x9F>
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(detok.flush(), "");
  // A byte that can never start a character is replaced at once.
  EXPECT_EQ(detok.push(3 + 0xFF), "\xEF\xBF\xBD");
  // <0xF0> then 'A' (<0x41>): the F0 is a cut sequence, then the A.
  EXPECT_EQ(detok.push(243), "");
  EXPECT_EQ(detok.push(3 + 0x41), "\xEF\xBF\xBD" "A");
}

TEST(Detokenizer, ByteLevelPiecesCombineAcrossTokens) {
  auto gpt2 = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(gpt2, nullptr);
  // Emoji are split into several byte-level tokens by GPT-2.
  const std::string text = "\xF0\x9F\x9A\x80 (normal) \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F";
  const auto ids = gpt2->encode(text, false, false);
  IncrementalDetokenizer detok(*gpt2);
  std::string all;
  int empty_chunks = 0;
  for (int32_t id : ids) {
    const std::string chunk = detok.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk));
    empty_chunks += chunk.empty() ? 1 : 0;
    all += chunk;
  }
  all += detok.flush();
  EXPECT_EQ(all, text);
  EXPECT_GT(empty_chunks, 0) << "some token must have ended mid-character";
}

}  // namespace
}  // namespace ladder::tokenizer
