// JSON Schema grammars judged by python3-jsonschema: hand-written texts must
// get the verdict written beside them (and python must agree), and every
// text the matcher accepts -- from random walks through the grammar with a
// byte vocabulary and with real ones, and random edits of those -- must
// parse and validate.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar_test_util.h"
#include "test_support.h"
#include "common/utf8.h"

namespace ladder::grammar {
namespace {

struct SchemaCase {
  const char* schema;
  std::vector<const char*> accept;  // the grammar must take these
  std::vector<const char*>
      reject;  // and refuse these (most are invalid; some valid but outside the grammar's subset)
};

const std::vector<SchemaCase>& schema_cases() {
  static const std::vector<SchemaCase> cases = {
      {R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
           "tags":{"type":"array","items":{"type":"string","maxLength":5},"minItems":1,"maxItems":3}},
           "required":["name","age","tags"],"additionalProperties":false})",
       {R"({"name":"Ann","age":42,"tags":["a"]})",
        "{ \"name\": \"\\u00e9\\n\",\n  \"age\": 150, \"tags\": [\"\", \"12345\", \"x\"] }",
        R"({"name":"\ud83d\ude00","age":0,"tags":["\\\""]})"},
       {R"({"age":42,"name":"Ann","tags":["a"]})", R"({"name":"Ann","age":151,"tags":["a"]})",
        R"({"name":"Ann","age":-1,"tags":["a"]})", R"({"name":"Ann","age":4,"tags":[]})",
        R"({"name":"Ann","age":4,"tags":["123456"]})", R"({"name":"Ann","age":4,"tags":["a"],"x":1})",
        R"({"name":"\ud800","age":1,"tags":["a"]})", R"({"name":"A","age":01,"tags":["a"]})",
        "{\"name\":\"A\",  \"age\":1,\"tags\":[\"a\"]}", R"({"name":"a	b","age":1,"tags":["a"]})"}},
      {R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"enum":["x",1,null,{"k":[1,2]}]}},
           "required":["b"]})",
       {R"({"b":null})", R"({"a":true,"b":null})", R"({"b":null,"c":{"k":[1,2]}})",
        R"({"a":false,"b":null,"c":"x"})"},
       {R"({})", R"({"a":true})", R"({"b":null,"a":true})", R"({"b":null,"c":2})",
        R"({"b":null,"c":{"k":[1, 2]}})"}},
      {R"({"anyOf":[{"type":"string","pattern":"^[a-z]+@[a-z]+\\.com$"},{"type":["integer","null"]}]})",
       {R"("bob@example.com")", "null", "-17", "0"},
       {R"("bob@example.org")", R"("Bob@example.com")", "1.5", "true", R"("")"}},
      {R"({"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},
           "u":{"type":"string","format":"uuid"},"e":{"type":"string","format":"email"},"ip":{"type":"string","format":"ipv4"}},
           "required":["d","t","u","e","ip"],"additionalProperties":false})",
       {R"({"d":"2024-02-29","t":"1999-12-31T23:59:59.25+05:30","u":"123e4567-e89b-12d3-a456-426614174000","e":"a.b@c.org","ip":"192.168.0.255"})",
        R"({"d":"2000-02-29","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-00000000000A","e":"x@y.zz","ip":"0.0.0.0"})"},
       {R"({"d":"2023-02-29","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"0.0.0.0"})",
        R"({"d":"1900-02-29","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"0.0.0.0"})",
        R"({"d":"2023-04-31","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"0.0.0.0"})",
        R"({"d":"2023-04-30","t":"2023-04-30T24:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"0.0.0.0"})",
        R"({"d":"2023-04-30","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"1.2.3.04"})",
        R"({"d":"0000-01-01","t":"2023-04-30T00:00:00Z","u":"00000000-0000-0000-0000-000000000000","e":"x@y.zz","ip":"0.0.0.0"})"}},
      {R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
           "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
           "required":["value","children"],"additionalProperties":false}},"$ref":"#/$defs/node"})",
       {R"({"value":1,"children":[]})",
        R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]}]})"},
       {R"({"value":1})", R"({"value":1,"children":[{"value":2}]})",
        R"({"value":1,"children":[{"value":2,"children":[]},{"value":2,"children":[]},{"value":2,"children":[]}]})"}},
      {R"({"type":"array","items":{"type":"integer","minimum":-37,"exclusiveMaximum":1205},"maxItems":7})",
       {"[]", "[-37,-1,0,9,10,99,100]", "[1204,999,1199,1200,-30]"},
       {"[-38]", "[1205]", "[2000]", "[-0]", "[1,2,3,4,5,6,7,8]", "[1.0]"}},
      {R"({"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":4}},"required":["s"]})",
       {R"({"s":"ab"})", R"({"s":"\n\"é😀"})", R"({"s":"\u0041\u00e9"})"},
       {R"({"s":"a"})", R"({"s":"abcde"})"}},
      {R"({"type":"string","pattern":"ab+c"})",
       {R"("abc")", R"("xxabbbcyy")", R"("\nabc\"")"},
       {R"("ac")", R"("abx")"}},
      {R"({"type":"string","pattern":"^\\d{3}-\\d{4}$"})",
       {R"("555-1234")"},
       {R"("5551234")", R"("555-12345")", R"(" 555-1234")"}},
      {R"({"type":"string","pattern":"^(?:[A-Z]\\w*|\\s+|[^a-z\"\\\\])+$"})",
       {R"("Hello World")", R"("A\t\n")", R"("0é")"},
       {R"("hello")", R"("A b")", R"("\"")", R"("\u0041")"}},
      {R"({"type":"object","additionalProperties":{"type":"number"}})",
       {"{}", R"({"a":1.5e10,"b":-0.25})", R"({"a":1,"a":2})"},
       {R"({"a":"1"})", R"({"a":1,})"}},
      {R"({"type":"object"})", {"{}", R"({"a":[1,{"b":null}],"c":"d"})"}, {"[]", R"({"a":})"}},
      {R"({"const":{"a":"bé\n","n":[1,2.5]}})",
       {R"({"a":"bé\n","n":[1,2.5]})"},
       {R"({"n":[1,2.5],"a":"bé\n"})"}},
      {R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"],
           "additionalProperties":false})",
       {R"({"next":null})", R"({"next":{"next":{"next":null}}})"},
       {R"({"next":{}})", R"({})"}},
      {R"({"type":"number"})",
       {"0", "-0.5", "1e5", "12.5E-3", "9999999999999999"},
       {"01", ".5", "1.", "+1", "NaN", "1e999"}},
      {R"({"allOf":[{"type":"boolean"}]})", {"true", "false"}, {"null", "1"}},
      {R"({"type":"integer","minimum":1000000})",
       {"1000000", "9999999999", "1000001"},
       {"999999", "-1000000", "0"}},
      {R"({"type":"integer","maximum":-5})", {"-5", "-6", "-100000"}, {"-4", "0", "5"}},
      {R"({"type":"array","items":{"type":"string","enum":["a\"b","c"]},"minItems":2,"maxItems":2})",
       {R"(["a\"b","c"])", R"(["c","c"])"},
       {R"(["c"])", R"(["c","c","c"])", R"(["d","c"])"}},
      {R"({"type":["string","boolean"],"maxLength":1})", {R"("a")", "true"}, {R"("ab")", "null"}},
  };
  return cases;
}

std::shared_ptr<const CompiledGrammar> compile_schema(
    const char* schema_text, std::shared_ptr<const TokenVocabulary> vocab = nullptr) {
  auto gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema_text));
  EXPECT_TRUE(gbnf.is_ok()) << schema_text << "\n" << gbnf.status().to_string();
  if (!gbnf.is_ok()) return nullptr;
  return testing::compile_gbnf(gbnf.value(), vocab);
}

// Python's verdicts for (schema index, text) pairs.
std::vector<std::string> python_verdicts(const std::vector<std::pair<size_t, std::string>>& texts) {
  std::vector<nlohmann::json> schemas;
  for (const SchemaCase& c : schema_cases()) schemas.push_back(nlohmann::json::parse(c.schema));
  return testing::python_verdicts(schemas, texts);
}

TEST(JsonSchemaGrammar, HandWrittenTextsAgreeWithPython) {
  std::vector<std::pair<size_t, std::string>> texts;
  std::vector<bool> expect_valid;
  for (size_t i = 0; i < schema_cases().size(); ++i) {
    const SchemaCase& c = schema_cases()[i];
    auto g = compile_schema(c.schema);
    ASSERT_NE(g, nullptr);
    for (const char* t : c.accept) {
      EXPECT_TRUE(testing::full_match(g, t)) << c.schema << "\n  should accept: " << t;
      texts.emplace_back(i, t);
      expect_valid.push_back(true);
    }
    for (const char* t : c.reject)
      EXPECT_FALSE(testing::full_match(g, t)) << c.schema << "\n  should reject: " << t;
  }
  // What the grammar accepts, python validates (checks the hand-written cases themselves).
  std::vector<std::string> verdicts = python_verdicts(texts);
  for (size_t k = 0; k < verdicts.size() && k < texts.size(); ++k) {
    EXPECT_EQ(verdicts[k], "valid") << schema_cases()[texts[k].first].schema
                                    << "\n  text: " << texts[k].second;
  }
}

// Random edits of an accepted text, kept only when still UTF-8.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  static const std::string kChars = "\"{}[],:0123456789-.eE \\ntfalsruxé\t";
  std::string out = text;
  const int edits = 1 + static_cast<int>(rng() % 2);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = out.empty() ? 0 : rng() % (out.size() + 1);
    const char c = kChars[rng() % kChars.size()];
    switch (rng() % 3) {
      case 0:
        if (pos < out.size()) out.erase(pos, 1);
        break;
      case 1: out.insert(pos, 1, c); break;
      default:
        if (pos < out.size()) out[pos] = c;
        break;
    }
  }
  return out;
}

TEST(JsonSchemaGrammar, EverythingTheMatcherAcceptsValidates) {
  auto bytes = testing::byte_vocabulary();
  auto stories = testing::shared_vocabulary("models/stories260K.gguf");
  auto llama = testing::shared_vocabulary("models/llama-2-tiny-random.gguf");
  ASSERT_NE(stories, nullptr);
  ASSERT_NE(llama, nullptr);
  std::mt19937_64 rng(7);
  std::vector<std::pair<size_t, std::string>> accepted;
  std::vector<std::pair<size_t, std::string>> rejected;
  int walks_ended = 0;
  int walks = 0;
  for (size_t i = 0; i < schema_cases().size(); ++i) {
    const SchemaCase& c = schema_cases()[i];
    for (const auto& vocab : {bytes, stories, llama}) {
      auto g = compile_schema(c.schema, vocab);
      ASSERT_NE(g, nullptr);
      const int n_walks = vocab == bytes ? 12 : 4;
      for (int w = 0; w < n_walks; ++w) {
        testing::WalkResult r = testing::random_walk(g, rng(), 600, vocab == bytes ? 60 : 25, false);
        ++walks;
        if (!r.ended) continue;
        ++walks_ended;
        accepted.emplace_back(i, r.text);
        if (vocab != bytes) continue;
        for (int m = 0; m < 6; ++m) {
          std::string t = mutate(r.text, rng);
          if (!is_valid_utf8(t)) continue;
          (testing::full_match(g, t) ? accepted : rejected).emplace_back(i, t);
        }
      }
    }
  }
  EXPECT_GT(walks_ended, walks * 9 / 10) << "most walks should reach an end";
  std::vector<std::string> verdicts = python_verdicts(accepted);
  for (size_t k = 0; k < verdicts.size() && k < accepted.size(); ++k) {
    EXPECT_EQ(verdicts[k], "valid") << schema_cases()[accepted[k].first].schema
                                    << "\n  text: " << accepted[k].second;
  }
  // The edits must have produced both verdicts for the test to mean much.
  EXPECT_GT(rejected.size(), accepted.size() / 4);
  std::vector<std::string> rejected_verdicts = python_verdicts(rejected);
  size_t invalid = 0;
  for (const std::string& v : rejected_verdicts) invalid += v != "valid";
  EXPECT_GT(invalid, rejected.size() / 2);
}

std::string schema_error_of(const char* schema) {
  auto r = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
  EXPECT_FALSE(r.is_ok()) << schema;
  return r.is_ok() ? std::string() : r.status().message();
}

StatusCode code_of(const char* schema) {
  auto r = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
  return r.is_ok() ? StatusCode::kOk : r.status().code();
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(schema_error_of(R"({"type":"object","properties":{"x":{"not":{"type":"null"}}}})"),
            "json_schema: keyword 'not' at /properties/x is not supported");
  EXPECT_EQ(code_of(R"({"not":{}})"), StatusCode::kUnimplemented);
  EXPECT_EQ(schema_error_of(R"({"type":"array","prefixItems":[{"type":"string"}]})"),
            "json_schema: keyword 'prefixItems' at the schema root is not supported");
  EXPECT_EQ(schema_error_of(R"({"type":"array","uniqueItems":true})"),
            "json_schema: keyword 'uniqueItems' at the schema root is not supported");
  EXPECT_EQ(schema_error_of(R"({"type":"number","minimum":0})"),
            "json_schema: 'minimum' on type number (only on integer) at the schema root is not supported");
  EXPECT_EQ(
      schema_error_of(R"({"type":"string","format":"uri"})"),
      "json_schema: format 'uri' is not supported (supported: date, time, date-time, uuid, email, ipv4) "
      "(at the schema root)");
  EXPECT_EQ(
      schema_error_of(R"({"type":"string","pattern":"^(a)\\1$"})"),
      "json_schema: pattern '^(a)\\1$', offset 4: backreferences are not supported (at the schema root)");
  EXPECT_EQ(
      schema_error_of(R"({"type":"string","pattern":"(?=a)b"})"),
      "json_schema: pattern '(?=a)b', offset 0: lookaround ((?=, (?!, (?<=, (?<!) is not supported (at the "
      "schema root)");
  EXPECT_EQ(schema_error_of(R"({"type":"string","pattern":"a\\bb"})"),
            "json_schema: pattern 'a\\bb', offset 1: word boundaries (\\b, \\B) are not supported (at the "
            "schema root)");
  EXPECT_EQ(
      schema_error_of(R"({"type":"string","pattern":"a^b"})"),
      "json_schema: pattern 'a^b', offset 1: '^' other than at the start of the pattern (or of a top-level "
      "alternative) is not supported (at the schema root)");
  EXPECT_EQ(
      schema_error_of(R"({"$ref":"https://example.com/s.json"})"),
      "json_schema: '$ref' to 'https://example.com/s.json' (only references inside this schema, starting "
      "with #) at the schema root is not supported");
  EXPECT_EQ(
      schema_error_of(R"({"type":"string","pattern":"a+","minLength":3})"),
      "json_schema: 'pattern' together with 'minLength'/'maxLength' at the schema root is not supported");
  EXPECT_EQ(schema_error_of(R"({"allOf":[{"type":"string"},{"maxLength":3}]})"),
            "json_schema: 'allOf' with more than one schema at the schema root is not supported");
  EXPECT_EQ(code_of(R"({"type":"object","minProperties":1})"), StatusCode::kUnimplemented);
  EXPECT_EQ(code_of(R"({"if":{},"then":{}})"), StatusCode::kUnimplemented);
}

TEST(JsonSchemaGrammar, MalformedSchemasAreInvalid) {
  EXPECT_EQ(schema_error_of(R"({"type":"strng"})"), "json_schema: unknown type 'strng' at the schema root");
  EXPECT_EQ(schema_error_of(R"({"$ref":"#/$defs/missing"})"),
            "json_schema: '$ref' '#/$defs/missing' points to nothing in the schema at the schema root");
  EXPECT_EQ(schema_error_of(R"({"type":"string","minLength":-1})"),
            "json_schema: 'minLength' must be a non-negative integer at the schema root");
  EXPECT_EQ(schema_error_of(R"({"type":"integer","minimum":5,"maximum":4})"),
            "json_schema: no integer of at most 16 digits lies within minimum/maximum at the schema root");
  EXPECT_EQ(
      schema_error_of(R"({"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false})"),
      "json_schema: required property 'b' is not in 'properties' at the schema root");
  EXPECT_EQ(schema_error_of(R"({"enum":[]})"), "json_schema: 'enum' must be a non-empty array at the schema root");
  EXPECT_EQ(schema_error_of(R"({"type":"object","properties":{"a":false}})"),
            "json_schema: schema false (no value validates) at /properties/a");
  EXPECT_EQ(code_of(R"({"type":"string","pattern":"a{"})"),
            StatusCode::kOk);  // a literal '{', as ECMAScript reads it
  EXPECT_EQ(code_of(R"({"type":"string","pattern":"(a"})"), StatusCode::kInvalidArgument);
}

// Random patterns from regex pieces: each converts (and the grammar then
// compiles) or fails with a Status naming the pattern; nothing crashes.
// What one request may ask to compile is bounded (a 2,000-level schema took
// 40 s of CPU): nesting past 64 levels, or more than 5,000 subschemas, is an
// error that names the limit.
TEST(JsonSchemaGrammar, DepthAndSizeAreBounded) {
  auto nested = [](int depth) {
    nlohmann::ordered_json s = {{"type", "integer"}};
    for (int i = 0; i < depth; ++i) s = {{"type", "object"}, {"properties", {{"a", s}}}, {"required", {"a"}}};
    return s;
  };
  EXPECT_TRUE(json_schema_to_gbnf(nested(63)).is_ok());
  auto deep = json_schema_to_gbnf(nested(64));
  ASSERT_FALSE(deep.is_ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(deep.status().message().find("deeper than 64 levels"), std::string::npos) << deep.status().message();
  nlohmann::ordered_json wide = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  for (int i = 0; i < 5000; ++i) wide["properties"]["p" + std::to_string(i)] = {{"type", "integer"}};
  auto many = json_schema_to_gbnf(wide);
  ASSERT_FALSE(many.is_ok());
  EXPECT_NE(many.status().message().find("more than 5000 subschemas"), std::string::npos) << many.status().message();
}

TEST(JsonSchemaGrammar, SurvivesRandomPatterns) {
  const std::vector<std::string> pieces = {"a", "\\d", "[a-z]", "[^\"]", "(",   ")",   "(?:",     "|",
                                           "*", "+?",  "{2,3}", "^",     "$",   "\\",  "\\u00e9", ".",
                                           "[", "]",   "{",     "\\b",   "(?=", "\\1", "-"};
  auto vocab = testing::byte_vocabulary();
  std::mt19937_64 rng(11);
  int ok = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string pattern;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k) pattern += pieces[rng() % pieces.size()];
    nlohmann::ordered_json schema = {{"type", "string"}, {"pattern", pattern}};
    auto gbnf = json_schema_to_gbnf(schema);
    if (!gbnf.is_ok()) {
      EXPECT_NE(gbnf.status().message().find("pattern '"), std::string::npos) << gbnf.status().message();
      continue;
    }
    ++ok;
    auto g = CompiledGrammar::from_gbnf(gbnf.value(), vocab);
    EXPECT_TRUE(g.is_ok()) << pattern << ": " << g.status().to_string();
  }
  EXPECT_GT(ok, 300);
}

TEST(JsonSchemaGrammar, NullableAndJsonObject) {
  auto g = compile_schema(
      R"({"type":"object","properties":{"a":{"type":"string","nullable":true}},"required":["a"]})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(testing::full_match(g, R"({"a":null})"));
  EXPECT_TRUE(testing::full_match(g, R"({"a":"x"})"));
  EXPECT_FALSE(testing::full_match(g, R"({"a":1})"));
  auto obj = testing::compile_gbnf(json_object_gbnf());
  ASSERT_NE(obj, nullptr);
  EXPECT_TRUE(testing::full_match(obj, R"({"a": [1, {"b": "c"}], "d": -1.5e3})"));
  EXPECT_FALSE(testing::full_match(obj, "[1]"));
  EXPECT_FALSE(testing::full_match(obj, R"("s")"));
  EXPECT_FALSE(testing::full_match(obj, "{}  "));  // whitespace is bounded, and none trails the value
  EXPECT_FALSE(testing::full_match(obj, "{  }"));
  EXPECT_TRUE(testing::full_match(obj, "{\n    \"a\": 1\n}"));
}

}  // namespace
}  // namespace ladder::grammar
