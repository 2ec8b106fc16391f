#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <utility>

#include "common/utf8.h"

namespace ladder::tokenizer {
namespace {

// Patterns as llama.cpp's llm_tokenizer_bpe uses them (src/llama-vocab.cpp),
// which adapt each model's tokenizer.json regex (e.g. "(?i:'s|...)" spelled out).
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// CJK ranges: U+4E00-U+9FA5, U+0800-U+4E00, U+AC00-U+D7FF.
constexpr const char* kCjk = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

// DeepSeek LLM's letter class, listed range by range as in its tokenizer.json.
constexpr const char* kDeepseekLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}"
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";
// ASCII punctuation and symbols, their full-width forms, quotes U+2018-U+201F
// and CJK punctuation U+3000-U+3002.
constexpr const char* kDeepseekPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+";

struct Family {
  const char* canonical;
  std::vector<const char*> names;  // `tokenizer.ggml.pre` values
  std::vector<const char*> regexes;
  bool ignore_merges;
};

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = {
      {"default",
       {"default"},
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
      {"llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3}, true},
      {"dbrx", {"dbrx", "smaug-bpe"}, {kLlama3}, false},
      {"deepseek-llm",
       {"deepseek-llm"},
       {"[\\r\\n]", kDeepseekLetters, kDeepseekPunct, "\\s+$", kCjk, "\\p{N}+"},
       false},
      {"deepseek-coder", {"deepseek-coder"}, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}, false},
      {"falcon", {"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, false},
      {"starcoder",
       {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2},
       false},
      // "gpt-neox" is not a value llama.cpp writes; GPT-NeoX-style vocabularies
      // are converted as "mpt" or "olmo". Accepted as an alias of the same rules.
      {"gpt-2", {"gpt-2", "phi-2", "mpt", "olmo", "jais", "gpt-neox", "roberta-bpe"}, {kGpt2}, false},
      {"qwen2", {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}, {kQwen2}, false},
  };
  return kFamilies;
}

}  // namespace

const std::vector<std::string>& supported_pre_tokenizers() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const Family& f : families()) names.insert(names.end(), f.names.begin(), f.names.end());
    return names;
  }();
  return kNames;
}

Result<PreTokenizerRules> pre_tokenizer_rules(std::string_view pre) {
  for (const Family& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), pre) == f.names.end()) continue;
    PreTokenizerRules rules;
    rules.canonical = f.canonical;
    rules.regexes.assign(f.regexes.begin(), f.regexes.end());
    rules.ignore_merges = f.ignore_merges;
    return rules;
  }
  return unimplemented(fmt::format("tokenizer.ggml.pre '{}' is not a supported pre-tokenizer (supported: {})", pre,
                                   fmt::join(supported_pre_tokenizers(), ", ")));
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: a match-data block and a JIT stack large enough for
// long runs of whitespace or letters, reused across calls.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

struct Span {
  size_t begin;
  size_t length;
};

}  // namespace

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(std::string_view pre) {
  LADDER_ASSIGN_OR_RETURN(PreTokenizerRules rules, pre_tokenizer_rules(pre));
  PreTokenizer p;
  for (const std::string& re : rules.regexes) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // DOLLAR_ENDONLY: "$" means the end of the piece, never "before a final \n".
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), options, &err,
                                     &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return internal_error(fmt::format("pre-tokenizer '{}': regex /{}/ does not compile at offset {}: {}", pre,
                                        re, err_offset, reinterpret_cast<const char*>(msg)));
    }
    auto compiled = std::make_unique<Compiled>();
    compiled->code = code;
    compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    p.compiled_.push_back(std::move(compiled));
  }
  p.rules_ = std::move(rules);
  return p;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  // Well-formed runs go through the regexes; each ill-formed byte is a piece.
  std::vector<Span> current;
  std::vector<bool> regex_free;  // [current.size()] pieces the regexes must not see
  {
    size_t run_begin = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      const auto b = static_cast<uint8_t>(text[pos]);
      if (b < 0x80) {
        ++pos;
        continue;
      }
      const Utf8Step step = utf8_step(text, pos);
      if (step.kind == Utf8Kind::kChar) {
        pos += step.length;
        continue;
      }
      if (pos > run_begin) {
        current.push_back({run_begin, pos - run_begin});
        regex_free.push_back(false);
      }
      current.push_back({pos, 1});
      regex_free.push_back(true);
      ++pos;
      run_begin = pos;
    }
    if (pos > run_begin) {
      current.push_back({run_begin, pos - run_begin});
      regex_free.push_back(false);
    }
  }

  MatchScratch& s = scratch();
  std::vector<Span> next;
  std::vector<bool> next_free;
  for (const auto& compiled : compiled_) {
    next.clear();
    next_free.clear();
    for (size_t i = 0; i < current.size(); ++i) {
      const Span frag = current[i];
      if (regex_free[i]) {
        next.push_back(frag);
        next_free.push_back(true);
        continue;
      }
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + frag.begin);
      size_t start = 0;  // search position within the fragment
      size_t emitted = 0;  // fragment bytes already covered by pieces
      while (start < frag.length) {
        const int rc = compiled->jit
                           ? pcre2_jit_match(compiled->code, subject, frag.length, start, 0, s.data, s.context)
                           : pcre2_match(compiled->code, subject, frag.length, start, PCRE2_NO_UTF_CHECK, s.data,
                                         s.context);
        // No match, or a resource error on pathological input: the rest of the
        // fragment stays one piece (it is still covered, never dropped).
        if (rc < 0) break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
        const size_t m_begin = ov[0];
        const size_t m_end = ov[1];
        if (m_begin > emitted) {
          next.push_back({frag.begin + emitted, m_begin - emitted});
          next_free.push_back(false);
        }
        if (m_end > m_begin) {
          next.push_back({frag.begin + m_begin, m_end - m_begin});
          next_free.push_back(false);
          emitted = m_end;
          start = m_end;
        } else {
          // An empty match: step over one character so the search advances.
          if (m_begin >= frag.length) break;
          emitted = std::max(emitted, m_begin);
          start = m_begin + utf8_char_length(std::string_view(text.data() + frag.begin, frag.length), m_begin);
        }
      }
      if (emitted < frag.length) {
        next.push_back({frag.begin + emitted, frag.length - emitted});
        next_free.push_back(false);
      }
    }
    std::swap(current, next);
    std::swap(regex_free, next_free);
  }
  for (const Span& sp : current) pieces->push_back(text.substr(sp.begin, sp.length));
}

}  // namespace ladder::tokenizer
