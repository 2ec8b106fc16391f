// Tokenizer API against real vocabularies (golden ids from
// ../shared/models/README.md and the llama.cpp vectors) and against small
// vocabularies built in memory, whose expected ids follow by hand from the
// merge ranks / scores given.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf_writer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer_test_util.h"

namespace ladder::tokenizer {
namespace {

using gguf::GgufWriter;
using gguf::Value;
using gguf::ValueType;
using testing::load_tokenizer;

Value string_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  for (const auto& s : items) v.push_back(Value::make_string(s));
  return Value::make_array(ValueType::kString, std::move(v));
}

Value int_array(const std::vector<int32_t>& items) {
  std::vector<Value> v;
  for (int32_t x : items) v.push_back(Value::make_int(ValueType::kInt32, x));
  return Value::make_array(ValueType::kInt32, std::move(v));
}

Value float_array(const std::vector<float>& items) {
  std::vector<Value> v;
  for (float x : items) v.push_back(Value::make_float(ValueType::kFloat32, x));
  return Value::make_array(ValueType::kFloat32, std::move(v));
}

// Parses the writer's bytes and builds a tokenizer; the bytes are kept in
// `storage` because GgufFile::parse does not copy them.
Result<std::unique_ptr<Tokenizer>> build(const GgufWriter& w, std::vector<uint8_t>* storage) {
  *storage = w.to_bytes();
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::parse(*storage));
  return Tokenizer::from_gguf(file);
}

// A byte-level BPE vocabulary: ids 0..255 are the byte characters (in byte
// order), then `extra` tokens, then <|end|> as a control token.
GgufWriter bpe_writer(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                      const std::string& pre = "gpt-2") {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_level_char(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  for (const auto& t : extra) {
    tokens.push_back(t);
    types.push_back(1);
  }
  tokens.push_back("<|end|>");
  types.push_back(3);
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", string_array(tokens));
  w.set("tokenizer.ggml.token_type", int_array(types));
  w.set("tokenizer.ggml.merges", string_array(merges));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tokens.size() - 1));
  return w;
}

TEST(TokenizerReal, Stories260KOnceUponATime) {
  auto tok = load_tokenizer("models/stories260K.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->bos_text(), "<s>");
  EXPECT_EQ(tok->eos_text(), "</s>");
  EXPECT_EQ(tok->encode("Once upon a time", true, false), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->encode("Once upon a time", false, false), (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST(TokenizerReal, Stories260KDecodesTheGoldenContinuation) {
  auto tok = load_tokenizer("models/stories260K.gguf");
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> ids = {
      432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292,
      411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426,
      338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310,
      439, 419, 357, 336};
  const std::string expected =
      ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
      "ball. She wanted to play with it, but it was too high.\nLily's mom said";
  EXPECT_EQ(tok->decode(ids), expected);
  std::vector<int32_t> with_prompt = {1, 403, 407, 261, 378};
  with_prompt.insert(with_prompt.end(), ids.begin(), ids.end());
  EXPECT_EQ(tok->decode(with_prompt), "Once upon a time" + expected);
}

TEST(TokenizerReal, ParseSpecialControlsRecognitionOfSpecialText) {
  auto spm = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(spm, nullptr);
  // "Hello world" is 15043 3186 (golden vectors); <s> is id 1.
  EXPECT_EQ(spm->encode("Hello<s>world", false, true), (std::vector<int32_t>{15043, 1, 3186}));
  const auto plain = spm->encode("Hello<s>world", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_GT(plain.size(), 3u);
  EXPECT_EQ(spm->decode(plain), "Hello<s>world");
  EXPECT_EQ(spm->encode("<s>", false, true), (std::vector<int32_t>{1}));
  EXPECT_NE(spm->encode("<s>", false, false), (std::vector<int32_t>{1}));
  EXPECT_EQ(spm->decode(std::vector<int32_t>{15043, 1, 3186}, /*skip_special=*/false), "Hello<s>world");
  EXPECT_EQ(spm->decode(std::vector<int32_t>{15043, 1, 3186}, /*skip_special=*/true), "Helloworld");

  auto gpt2 = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(gpt2, nullptr);
  EXPECT_EQ(gpt2->encode("<|endoftext|>", false, true), (std::vector<int32_t>{50256}));
  const auto gplain = gpt2->encode("a<|endoftext|>b", false, false);
  EXPECT_EQ(std::count(gplain.begin(), gplain.end(), 50256), 0);
  EXPECT_EQ(gpt2->decode(gplain), "a<|endoftext|>b");
  const auto gspecial = gpt2->encode("a<|endoftext|>b", false, true);
  ASSERT_EQ(gspecial.size(), 3u);
  EXPECT_EQ(gspecial[1], 50256);
  EXPECT_EQ(gpt2->decode(gspecial, false), "a<|endoftext|>b");
  EXPECT_EQ(gpt2->decode(gspecial, true), "ab");
}

TEST(TokenizerReal, EndOfGenerationAndSpecialIds) {
  auto gpt2 = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(gpt2, nullptr);
  EXPECT_EQ(gpt2->end_of_generation_ids(), (std::vector<int32_t>{50256}));
  EXPECT_TRUE(gpt2->is_end_of_generation(50256));
  EXPECT_FALSE(gpt2->is_end_of_generation(0));
  EXPECT_FALSE(gpt2->is_end_of_generation(-1));
  EXPECT_FALSE(gpt2->is_end_of_generation(1 << 30));
  EXPECT_FALSE(gpt2->add_bos_default());
  EXPECT_EQ(gpt2->token_text(50256), "<|endoftext|>");
  EXPECT_EQ(gpt2->token_text(-5), "");

  auto spm = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(spm, nullptr);
  EXPECT_EQ(spm->end_of_generation_ids(), (std::vector<int32_t>{2}));
  EXPECT_EQ(spm->token_text(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(spm->token_piece(15043), " Hello");
  EXPECT_EQ(spm->token_piece(243), "\xF0");  // <0xF0>
  EXPECT_TRUE(spm->is_special(1));
  EXPECT_FALSE(spm->is_special(15043));

  auto falcon = load_tokenizer("tokenizers/ggml-vocab-falcon.gguf");
  ASSERT_NE(falcon, nullptr);
  EXPECT_TRUE(falcon->is_end_of_generation(11));  // <|endoftext|>, also its EOS
}

TEST(TokenizerReal, DigestIdentifiesTheVocabulary) {
  auto a = load_tokenizer("tokenizers/ggml-vocab-llama-spm.gguf");
  auto b = testing::load_tokenizer_uncached("tokenizers/ggml-vocab-llama-spm.gguf");
  auto c = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  auto d = load_tokenizer("models/llama-2-tiny-random.gguf");
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(a->digest().size(), 64u);
  EXPECT_EQ(a->digest().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a->digest(), b->digest());
  EXPECT_NE(a->digest(), c->digest());
  // llama-2-tiny-random carries the same Llama-2 vocabulary: same tokenization.
  EXPECT_EQ(d->encode("Hello world", true, false), (std::vector<int32_t>{1, 15043, 3186}));
}

TEST(TokenizerSynthetic, BpeMergesFollowRanksAndTies) {
  // ids: 256 "ab", 257 "bc", 258 "abc"
  std::vector<uint8_t> bytes;
  {
    auto tok = build(bpe_writer({"ab", "bc", "abc"}, {"a b", "b c", "ab c"}), &bytes);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    EXPECT_EQ((*tok)->encode("abc", false, false), (std::vector<int32_t>{258}));
    // "abab": the pair "a b" twice, both merged.
    EXPECT_EQ((*tok)->encode("abab", false, false), (std::vector<int32_t>{256, 256}));
    // "x" alone is its byte token.
    EXPECT_EQ((*tok)->encode("x", false, false), (std::vector<int32_t>{'x'}));
  }
  {
    // "b c" ranks first: "abc" becomes "a" + "bc"; "ab c" never applies.
    auto tok = build(bpe_writer({"ab", "bc", "abc"}, {"b c", "a b", "ab c"}), &bytes);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    EXPECT_EQ((*tok)->encode("abc", false, false), (std::vector<int32_t>{'a', 257}));
    // The space is its own byte character (0x20 -> id 32); the pre-tokenizer
    // makes " abc" one piece, which has no merge for "Ġ a".
    EXPECT_EQ((*tok)->encode(" abc", false, false), (std::vector<int32_t>{32, 'a', 257}));
    EXPECT_EQ((*tok)->decode(std::vector<int32_t>{32, 'a', 257}), " abc");
  }
}

TEST(TokenizerSynthetic, Llama3IgnoresMergesForWholeTokenPieces) {
  // ids: 256 "abc", 257 "ab"; the only merge is "a b", so merging alone
  // turns "abc" into [ab, c]. Llama 3's pre-tokenizer emits a piece that is
  // itself a token whole.
  std::vector<uint8_t> b1;
  std::vector<uint8_t> b2;
  auto gpt2 = build(bpe_writer({"abc", "ab"}, {"a b"}, "gpt-2"), &b1);
  auto llama3 = build(bpe_writer({"abc", "ab"}, {"a b"}, "llama-bpe"), &b2);
  ASSERT_TRUE(gpt2.is_ok() && llama3.is_ok());
  EXPECT_EQ((*gpt2)->encode("abc", false, false), (std::vector<int32_t>{257, 'c'}));
  EXPECT_EQ((*llama3)->encode("abc", false, false), (std::vector<int32_t>{256}));
  EXPECT_EQ((*llama3)->encode("abcd", false, false), (std::vector<int32_t>{257, 'c', 'd'}));
}

TEST(TokenizerReal, ConcurrentEncodesAgree) {
  auto tok = load_tokenizer("tokenizers/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(tok, nullptr);
  const std::string text = "The quick brown fox jumps over the lazy dog 12345 times!\n\tCaf\xC3\xA9 \xF0\x9F\xA6\x99";
  const auto expected = tok->encode(text, false, false);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (tok->encode(text, false, false) != expected) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(TokenizerSynthetic, BpeControlTokenAndEog) {
  std::vector<uint8_t> bytes;
  auto tok = build(bpe_writer({}, {}), &bytes);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const int32_t end = (*tok)->n_vocab() - 1;
  EXPECT_EQ((*tok)->encode("<|end|>", false, true), (std::vector<int32_t>{end}));
  EXPECT_EQ((*tok)->encode("<|end|>", false, false).size(), 7u);
  EXPECT_TRUE((*tok)->is_end_of_generation(end));
  EXPECT_EQ((*tok)->bos_id(), kNoToken);
  EXPECT_EQ((*tok)->encode("a", /*add_bos=*/true, false), (std::vector<int32_t>{'a'}));
}

TEST(TokenizerSynthetic, SpmScoresPickTheMerge) {
  // SentencePiece: pieces "▁a" (score -1), "ab" (score -2), "▁ab" (score -3).
  // "ab" with the space prefix is "▁ab": the best first pair is "▁a" (-1),
  // then "▁a"+"b" = "▁ab" exists: result [▁ab].
  auto spm_writer = [](float score_ab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b",
                                       "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "c"};
    std::vector<float> scores = {0, 0, 0, -5, -4, -4, -1, score_ab, -3, -4};
    std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set("tokenizer.ggml.tokens", string_array(tokens));
    w.set("tokenizer.ggml.scores", float_array(scores));
    w.set("tokenizer.ggml.token_type", int_array(types));
    return w;
  };
  std::vector<uint8_t> bytes;
  auto tok = build(spm_writer(-2), &bytes);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("ab", true, false), (std::vector<int32_t>{1, 8}));
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{1, 8}), "ab");
  // "cab": ▁ c a b -> pairs "▁c" (none), "ca" (none), "ab" (-2): "ab" first,
  // then "c"+"ab" is no token: [▁, c, ab].
  EXPECT_EQ((*tok)->encode("cab", false, false), (std::vector<int32_t>{3, 9, 7}));
  // Byte fallback is <unk> here (no <0xNN> tokens): "z" is unknown.
  EXPECT_EQ((*tok)->encode("z", false, false), (std::vector<int32_t>{3, 0}));
  // With "ab" scored above "▁a", "ab" merges first and "▁"+"ab" = "▁ab".
  auto tok2 = build(spm_writer(0.5f), &bytes);
  ASSERT_TRUE(tok2.is_ok());
  EXPECT_EQ((*tok2)->encode("ab", false, false), (std::vector<int32_t>{8}));
  EXPECT_EQ((*tok2)->encode("abc", false, false), (std::vector<int32_t>{8, 9}));
}

TEST(TokenizerErrors, UnsupportedModelTypeIsNamed) {
  std::vector<uint8_t> bytes;
  GgufWriter w = bpe_writer({}, {});
  w.set_string("tokenizer.ggml.model", "bert");
  auto tok = build(w, &bytes);
  ASSERT_FALSE(tok.is_ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("'bert'"), std::string::npos) << tok.status().message();
}

TEST(TokenizerErrors, UnsupportedPreTokenizerIsNamed) {
  std::vector<uint8_t> bytes;
  auto tok = build(bpe_writer({}, {}, "made-up-pre"), &bytes);
  ASSERT_FALSE(tok.is_ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("'made-up-pre'"), std::string::npos) << tok.status().message();
  EXPECT_NE(tok.status().message().find("llama-bpe"), std::string::npos) << "lists what is supported";
}

TEST(TokenizerErrors, SupportedPreTokenizersAllLoad) {
  for (const std::string& pre : supported_pre_tokenizers()) {
    std::vector<uint8_t> bytes;
    auto tok = build(bpe_writer({"ab"}, {"a b"}, pre), &bytes);
    ASSERT_TRUE(tok.is_ok()) << pre << ": " << tok.status().to_string();
    const std::string text = "Hello, world! 12345 \xE4\xBD\xA0\xE5\xA5\xBD\n\n  ab";
    EXPECT_EQ((*tok)->decode((*tok)->encode(text, false, false)), text) << pre;
  }
}

TEST(TokenizerErrors, MalformedTokenizerMetadata) {
  std::vector<uint8_t> bytes;
  {
    GgufWriter w = bpe_writer({}, {});
    w.set("tokenizer.ggml.token_type", int_array({1, 1, 1}));
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.token_type"), std::string::npos);
  }
  {
    GgufWriter w = bpe_writer({}, {});
    w.set_u32("tokenizer.ggml.eos_token_id", 100000);
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.eos_token_id"), std::string::npos);
  }
  {
    GgufWriter w = bpe_writer({}, {"nospace"});
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.merges[0]"), std::string::npos);
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.tokens", string_array({"a", "b"}));
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.merges"), std::string::npos);
  }
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.ggml.model"), std::string::npos);
  }
  {
    // A SentencePiece vocabulary with neither byte tokens nor <unk>.
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set("tokenizer.ggml.tokens", string_array({"a", "b", "c"}));
    w.set_i32("tokenizer.ggml.unknown_token_id", -1);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    auto tok = build(w, &bytes);
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("byte 0x00"), std::string::npos) << tok.status().message();
  }
}

TEST(TokenizerSynthetic, DigestChangesWithAnyScore) {
  std::vector<uint8_t> b1;
  std::vector<uint8_t> b2;
  GgufWriter w1 = bpe_writer({"ab"}, {"a b"});
  GgufWriter w2 = bpe_writer({"ab"}, {"a b"});
  std::vector<float> scores(258, 0.0f);
  scores[100] = 1.0f;
  w2.set("tokenizer.ggml.scores", float_array(scores));
  auto t1 = build(w1, &b1);
  auto t2 = build(w2, &b2);
  ASSERT_TRUE(t1.is_ok() && t2.is_ok());
  EXPECT_NE((*t1)->digest(), (*t2)->digest());
}

}  // namespace
}  // namespace ladder::tokenizer
