#include "harness/text_synth.h"

#include <cmath>

#include "harness/workload.h"

namespace ladder::harness {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TextSynthesizer::TextSynthesizer(const std::string& corpus, double chars_per_token)
    : chars_per_token_(chars_per_token) {
  LADDER_CHECK(chars_per_token > 0, "chars_per_token must be positive");
  corpus_.reserve(corpus.size());
  bool last_space = true;
  for (unsigned char c : corpus) {
    bool space = c <= ' ' || c >= 0x7f;
    if (space) {
      if (!last_space) corpus_ += ' ';
    } else {
      corpus_ += static_cast<char>(c);
    }
    last_space = space;
  }
  while (!corpus_.empty() && corpus_.back() == ' ') corpus_.pop_back();
  if (corpus_.empty()) corpus_ = "text";
}

Result<TextSynthesizer> TextSynthesizer::from_file(const std::string& path, double chars_per_token) {
  if (!(chars_per_token > 0)) return invalid_argument("chars per token must be > 0");
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  if (text.empty()) return invalid_argument("text corpus " + path + " is empty");
  return TextSynthesizer(text, chars_per_token);
}

size_t TextSynthesizer::chars_for_tokens(int64_t tokens) const {
  if (tokens <= 0) return 0;
  return static_cast<size_t>(std::llround(static_cast<double>(tokens) * chars_per_token_));
}

std::string TextSynthesizer::passage(uint64_t key, size_t chars) const {
  std::string out;
  out.reserve(chars);
  size_t pos = mix64(key) % corpus_.size();
  // Start on a word: skip to just after the next space (if there is one soon).
  size_t space = corpus_.find(' ', pos);
  if (space != std::string::npos && space + 1 < corpus_.size() && space - pos < 64) pos = space + 1;
  while (out.size() < chars) {
    size_t take = std::min(chars - out.size(), corpus_.size() - pos);
    out.append(corpus_, pos, take);
    pos = 0;
    if (out.size() < chars) out += ' ';
  }
  out.resize(chars);
  return out;
}

std::string TextSynthesizer::for_blocks(const std::vector<int64_t>& hash_ids, int64_t block_tokens,
                                        int64_t tokens, uint64_t unique_key) const {
  LADDER_CHECK(block_tokens > 0, "block_tokens must be positive");
  const size_t total = chars_for_tokens(tokens);
  const size_t block_chars = std::max<size_t>(1, chars_for_tokens(block_tokens));
  std::string out;
  out.reserve(total);
  for (int64_t id : hash_ids) {
    if (out.size() >= total) break;
    // Every block is generated whole and then cut, so a block that ends one
    // prompt early is still a prefix of the same block in a longer prompt.
    std::string block = passage(mix64(static_cast<uint64_t>(id)) ^ 0xb10cULL, block_chars);
    out.append(block, 0, std::min(block.size(), total - out.size()));
  }
  if (out.size() < total) out += passage(mix64(unique_key) ^ 0x0e1fULL, total - out.size());
  return out;
}

}  // namespace ladder::harness
