// UTF-8 walking and replacement, the GPT-2 byte alphabet and the regex
// pre-tokenizers, against values worked out by hand from the Unicode
// standard, GPT-2's bytes_to_unicode and the regex definitions.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <map>

#include "tokenizer/byte_level.h"
#include "tokenizer/flat_string_map.h"
#include "tokenizer/pre_tokenizer.h"
#include "common/utf8.h"

namespace ladder::tokenizer {
namespace {

TEST(Utf8, StepClassifiesBytes) {
  EXPECT_EQ(utf8_step("a", 0).kind, Utf8Kind::kChar);
  const Utf8Step euro = utf8_step("\xE2\x82\xAC", 0);
  EXPECT_EQ(euro.kind, Utf8Kind::kChar);
  EXPECT_EQ(euro.length, 3u);
  EXPECT_EQ(euro.codepoint, 0x20ACu);
  EXPECT_EQ(utf8_step("\xE2\x82", 0).kind, Utf8Kind::kIncomplete);
  EXPECT_EQ(utf8_step("\xC0\xAF", 0).kind, Utf8Kind::kInvalid);      // overlong
  EXPECT_EQ(utf8_step("\xED\xA0\x80", 0).kind, Utf8Kind::kInvalid);  // surrogate
  EXPECT_EQ(utf8_step("\xF4\x90\x80\x80", 0).kind, Utf8Kind::kInvalid);  // > U+10FFFF
  EXPECT_EQ(utf8_step("\x80", 0).kind, Utf8Kind::kInvalid);
  EXPECT_EQ(utf8_step("\xF0\x9F\x98\x80", 0).codepoint, 0x1F600u);
}

TEST(Utf8, SanitizeUsesMaximalSubparts) {
  // The Unicode standard's example (chapter 3, "U+FFFD substitution of maximal subparts"):
  // 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(sanitize_utf8(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(sanitize_utf8("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), r);
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));
  EXPECT_TRUE(is_valid_utf8(""));
}

TEST(Utf8, AppendEncodes) {
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u}) append_utf8(cp, &s);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(ByteLevel, AlphabetMatchesGpt2) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");     // U+0120 'Ġ' (byte 32 is the 33rd unmapped byte)
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");    // U+010A 'Ċ'
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_char(0x00), "\xC4\x80");    // U+0100
  EXPECT_EQ(byte_level_char(0x7F), "\xC4\xA1");    // U+0121
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");    // U+0143, the last one
  EXPECT_EQ(byte_level_char(0xE9), "\xC3\xA9");    // printable Latin-1 maps to itself
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string back;
  EXPECT_TRUE(byte_level_decode(byte_level_encode(all), &back));
  EXPECT_EQ(back, all);
  back.clear();
  EXPECT_FALSE(byte_level_decode("\xE2\x82\xAC", &back));  // '€' is not in the alphabet: kept
  EXPECT_EQ(back, "\xE2\x82\xAC");
}

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  if (!p.is_ok()) return {};
  std::vector<std::string_view> pieces;
  p->split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Gpt2Rules) {
  EXPECT_EQ(split("gpt-2", "Hello world's 123  end\n"),
            (Pieces{"Hello", " world", "'s", " 123", " ", " end", "\n"}));
  EXPECT_EQ(split("gpt-2", "ab\xFF" "cd"), (Pieces{"ab", "\xFF", "cd"}));
  EXPECT_EQ(split("gpt-2", ""), Pieces{});
}

TEST(PreTokenizer, Llama3Rules) {
  EXPECT_EQ(split("llama-bpe", "Hello 12345 world!!\n\n"),
            (Pieces{"Hello", " ", "123", "45", " world", "!!\n\n"}));
  EXPECT_EQ(split("llama-bpe", "I'M here"), (Pieces{"I", "'M", " here"}));
  auto rules = pre_tokenizer_rules("llama-bpe");
  ASSERT_TRUE(rules.is_ok());
  EXPECT_TRUE(rules->ignore_merges);
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(split("qwen2", "abc 1234"), (Pieces{"abc", " ", "1", "2", "3", "4"}));
}

TEST(PreTokenizer, DeepseekLlmPasses) {
  // "[\r\n]" cuts the newline, letters take "Hi", the CJK pass takes "你好".
  EXPECT_EQ(split("deepseek-llm", "Hi \xE4\xBD\xA0\xE5\xA5\xBD\n"),
            (Pieces{"Hi", " ", "\xE4\xBD\xA0\xE5\xA5\xBD", "\n"}));
  // "\s+$" is the end of the piece only, not "before a final newline".
  EXPECT_EQ(split("deepseek-llm", "a  \nb"), (Pieces{"a", "  ", "\n", "b"}));
}

TEST(PreTokenizer, FalconAndStarcoderDigits) {
  EXPECT_EQ(split("falcon", "x 1234567"), (Pieces{"x", " ", "123", "456", "7"}));
  EXPECT_EQ(split("starcoder", "x 123"), (Pieces{"x", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, UnknownPreIsRejectedByName) {
  auto p = PreTokenizer::create("no-such-pre");
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(p.status().message().find("'no-such-pre'"), std::string::npos);
}

TEST(PreTokenizer, PiecesAlwaysCoverTheText) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte_dist(0, 255);
  for (const std::string& pre : supported_pre_tokenizers()) {
    auto p = PreTokenizer::create(pre);
    ASSERT_TRUE(p.is_ok()) << pre;
    for (int i = 0; i < 30; ++i) {
      std::string text(static_cast<size_t>(i * 3), '\0');
      for (char& c : text) c = static_cast<char>(i % 2 ? byte_dist(rng) : "a1 ,\n\t!\xC3\xA9"[byte_dist(rng) % 10]);
      std::vector<std::string_view> pieces;
      p->split(text, &pieces);
      std::string joined;
      for (auto piece : pieces) {
        EXPECT_FALSE(piece.empty()) << pre;
        joined += piece;
      }
      EXPECT_EQ(joined, text) << pre;
    }
  }
}

TEST(FlatStringMap, AgreesWithStdMapThroughGrowth) {
  std::mt19937 rng(11);
  std::vector<std::string> keys;  // stable storage: the map holds views
  keys.reserve(5000);
  for (int i = 0; i < 5000; ++i) {
    std::string k(static_cast<size_t>(rng() % 12), '\0');
    for (char& c : k) c = static_cast<char>('a' + rng() % 4);
    keys.push_back(k);
  }
  FlatStringMap<int> flat(1);
  std::map<std::string, int> ref;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 3 == 0) {
      flat.insert_or_assign(keys[i], static_cast<int>(i));
      ref[keys[i]] = static_cast<int>(i);
    } else {
      const bool inserted = flat.insert(keys[i], static_cast<int>(i));
      EXPECT_EQ(inserted, ref.emplace(keys[i], static_cast<int>(i)).second);
    }
  }
  EXPECT_EQ(flat.size(), ref.size());
  for (const auto& [k, v] : ref) {
    const int* got = flat.find(k);
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(*got, v) << k;
  }
  EXPECT_EQ(flat.find("zzz"), nullptr);
}

}  // namespace
}  // namespace ladder::tokenizer
