// What the engine benchmarks feed an engine and read back: reproducible
// token runs without shared prefixes, and a stream's generated tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace ladder::perf {

// len token ids in [3, n_vocab) (past the control tokens), a fixed function
// of seed: distinct seeds give runs that share no prefix.
inline std::vector<int32_t> synthetic_tokens(uint64_t seed, int64_t len, int64_t n_vocab) {
  std::vector<int32_t> t;
  uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
  while (static_cast<int64_t>(t.size()) < len) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t.push_back(static_cast<int32_t>(3 + (x >> 33) % static_cast<uint64_t>(n_vocab - 3)));
  }
  return t;
}

// Reads the stream to its end: the tokens it generated, in order.
inline std::vector<int32_t> drain_tokens(engine::TokenStream& s) {
  std::vector<int32_t> out;
  while (auto e = s.next()) {
    if (e->kind == engine::StreamEvent::Kind::kToken) out.push_back(e->token.token);
  }
  return out;
}

}  // namespace ladder::perf
