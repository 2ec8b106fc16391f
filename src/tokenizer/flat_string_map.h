// FlatStringMap: an open-addressing hash map from string_view to a small
// value, for the tokenizer's hot look-ups (token text -> id, piece -> ids
// already produced). Keys are views: whatever they point into must outlive
// the map. Linear probing at load <= 1/2 keeps a look-up to about one cache
// line, where a node-based std::unordered_map costs a pointer chase or two.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace ladder::tokenizer {

// A fast non-cryptographic hash of a short byte string (8 bytes per step).
inline uint64_t hash_string(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
  while (n >= 8) {
    uint64_t w = 0;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
  }
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

template <typename V>
class FlatStringMap {
 public:
  explicit FlatStringMap(size_t expected = 8) { slots_.resize(capacity_for(expected)); }

  const V* find(std::string_view key) const {
    const uint64_t h = hash_string(key);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.hash == h && s.key == key) return &s.value;
    }
  }

  // Sets key -> value, replacing an existing value.
  void insert_or_assign(std::string_view key, V value) {
    Slot& s = locate(key, hash_string(key));
    s.value = std::move(value);
  }

  // Inserts key -> value when key is absent; returns false (and changes
  // nothing) when it is present.
  bool insert(std::string_view key, V value) {
    const uint64_t h = hash_string(key);
    const size_t before = size_;
    Slot& s = locate(key, h);
    if (size_ == before) return false;
    s.value = std::move(value);
    return true;
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view key;
    V value{};
    bool used = false;
  };

  static size_t capacity_for(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    return cap;
  }

  // The slot holding key, claimed (empty value) when it was absent.
  Slot& locate(std::string_view key, uint64_t h) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.hash = h;
        s.key = key;
        ++size_;
        return s;
      }
      if (s.hash == h && s.key == key) return s;
    }
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (Slot& s : old) {
      if (!s.used) continue;
      size_t i = s.hash & mask;
      while (slots_[i].used) i = (i + 1) & mask;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ladder::tokenizer
