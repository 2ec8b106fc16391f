#include "common/page_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <utility>

namespace ladder {
namespace {

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

uint8_t* map_anonymous(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

PageMemory PageMemory::map(size_t bytes, Pages pages) {
  if (bytes == 0) return {};
  constexpr size_t kHuge = kHugePageBytes;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > std::numeric_limits<size_t>::max() - kHuge - page) return {};
  const size_t mapped = round_up(bytes, page);
  if (pages == Pages::kSmall || bytes < kHuge) {
    uint8_t* p = map_anonymous(mapped);
    return p == nullptr ? PageMemory{} : PageMemory{p, bytes, mapped};
  }
  // Over-map by one huge page, then give back the unaligned head and what
  // lies beyond `mapped`: the memory starts on a 2 MiB boundary. Only its
  // whole 2 MiB pages are advised (the last partial one stays small pages,
  // so no buffer grows by more than a 4 KiB page).
  uint8_t* raw = map_anonymous(mapped + kHuge);
  if (raw == nullptr) return {};
  const auto addr = reinterpret_cast<uintptr_t>(raw);
  uint8_t* aligned = raw + (round_up(addr, kHuge) - addr);
  if (aligned > raw) ::munmap(raw, static_cast<size_t>(aligned - raw));
  uint8_t* end = raw + mapped + kHuge;
  if (aligned + mapped < end) ::munmap(aligned + mapped, static_cast<size_t>(end - (aligned + mapped)));
#ifdef MADV_HUGEPAGE
  // Advice only: refused (THP "never", or a kernel without it), the memory
  // is ordinary pages.
  ::madvise(aligned, bytes / kHuge * kHuge, MADV_HUGEPAGE);
#endif
  return PageMemory{aligned, bytes, mapped};
}

PageMemory::PageMemory(PageMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

PageMemory& PageMemory::operator=(PageMemory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

PageMemory::~PageMemory() {
  release();
}

void PageMemory::release() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  bytes_ = mapped_ = 0;
}

}  // namespace ladder
