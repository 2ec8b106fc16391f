// ggml's tensor type numbers for the KV cache types the bench/llamacpp_*
// tools ask llama.cpp for, by llama.cpp's names (the ggml_type values are
// stable across llama.cpp releases; the tools include llama.h only).
#pragma once

#include <optional>
#include <string_view>

namespace ladder::bench {

inline std::optional<int> ggml_cache_type(std::string_view name) {
  struct Entry {
    std::string_view name;
    int value;
  };
  static constexpr Entry kTypes[] = {{"f32", 0},  {"f16", 1},  {"q4_0", 2}, {"q4_1", 3},
                                     {"q5_0", 6}, {"q5_1", 7}, {"q8_0", 8}};
  for (const Entry& e : kTypes) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

}  // namespace ladder::bench
