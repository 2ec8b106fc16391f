// Large buffers taken straight from the OS: an anonymous private mapping,
// zero until written and resident only where written (the KV arena,
// kv/kv_storage.h). With Pages::kHuge a buffer of 2 MiB or more starts on a
// 2 MiB boundary and its whole 2 MiB pages are advised for transparent huge
// pages, so where the kernel allows them (THP "madvise", Debian's default, or
// "always") a stream over it needs one TLB entry per 2 MiB instead of one per
// 4 KiB: the packed weights decode streams (ops/packed_weights.h; on the
// 2-vCPU Zen 5 VM a 1b decode step's matmuls ran 1.27-1.36x faster in two
// of seven paired runs and at parity in the others, bench/
// huge_pages_bench.cc), and the bandwidth probe that is their roofline
// (ops/roofline.h). Smaller buffers, the last partial 2 MiB and every
// buffer where huge pages are refused are ordinary pages; nothing else
// changes, and no buffer takes more memory than its size rounded to a page.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ladder {

class PageMemory {
 public:
  enum class Pages { kSmall, kHuge };

  // The size huge pages come in on the platforms Ladder runs on (x86-64 and
  // AArch64 with 4 KiB base pages).
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  // `bytes` of zeroed memory; empty() when the OS refuses the mapping.
  static PageMemory map(size_t bytes, Pages pages);

  PageMemory() = default;
  PageMemory(PageMemory&& other) noexcept;
  PageMemory& operator=(PageMemory&& other) noexcept;
  PageMemory(const PageMemory&) = delete;
  PageMemory& operator=(const PageMemory&) = delete;
  ~PageMemory();

  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }  // as asked for; the mapping may be longer
  bool empty() const { return data_ == nullptr; }

 private:
  PageMemory(uint8_t* data, size_t bytes, size_t mapped) : data_(data), bytes_(bytes), mapped_(mapped) {}
  void release();

  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
  size_t mapped_ = 0;
};

}  // namespace ladder
