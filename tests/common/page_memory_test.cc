#include "common/page_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace ladder {
namespace {

// The VmFlags line of the /proc/self/smaps entry whose range holds p; empty
// when none does.
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return {};
}

bool has_flag(const std::string& flags, const std::string& flag) {
  std::istringstream in(flags.substr(flags.find(':') + 1));
  std::string f;
  while (in >> f) {
    if (f == flag) return true;
  }
  return false;
}

bool kernel_has_thp() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
}

TEST(PageMemory, HugeIsAlignedZeroedWritableAndAdvised) {
  const size_t bytes = 3 * PageMemory::kHugePageBytes + 5;
  PageMemory m = PageMemory::map(bytes, PageMemory::Pages::kHuge);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % PageMemory::kHugePageBytes, 0u);
  for (size_t i : {size_t{0}, bytes / 2, bytes - 1}) EXPECT_EQ(m.data()[i], 0) << i;
  m.data()[0] = 1;
  m.data()[bytes - 1] = 2;
  EXPECT_EQ(m.data()[0] + m.data()[bytes - 1], 3);
  const std::string flags = vm_flags_of(m.data());
  ASSERT_FALSE(flags.empty()) << "no smaps entry for the mapping";
  if (!kernel_has_thp()) GTEST_SKIP() << "this kernel has no transparent huge pages";
  EXPECT_TRUE(has_flag(flags, "hg")) << flags;  // madvise(MADV_HUGEPAGE) took
  // The last partial 2 MiB is not advised: it is its own mapping entry.
  EXPECT_FALSE(has_flag(vm_flags_of(m.data() + bytes - 1), "hg"));
}

TEST(PageMemory, HugeBelowOneHugePageIsSmallPages) {
  PageMemory m = PageMemory::map(PageMemory::kHugePageBytes - 1, PageMemory::Pages::kHuge);
  ASSERT_FALSE(m.empty());
  EXPECT_FALSE(has_flag(vm_flags_of(m.data()), "hg"));
}

TEST(PageMemory, SmallIsPageAlignedZeroedAndNotAdvised) {
  const size_t bytes = 10'000;
  PageMemory m = PageMemory::map(bytes, PageMemory::Pages::kSmall);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(m.data()[i], 0) << i;
  EXPECT_FALSE(has_flag(vm_flags_of(m.data()), "hg"));
}

TEST(PageMemory, MovesOwnershipAndUnmapsOnce) {
  PageMemory a = PageMemory::map(PageMemory::kHugePageBytes, PageMemory::Pages::kHuge);
  ASSERT_FALSE(a.empty());
  uint8_t* p = a.data();
  p[7] = 9;
  PageMemory b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[7], 9);
  PageMemory c = PageMemory::map(100, PageMemory::Pages::kSmall);
  c = std::move(b);  // c's first mapping is released here
  EXPECT_EQ(c.data(), p);
  c = PageMemory{};
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(vm_flags_of(p).empty());  // unmapped
}

TEST(PageMemory, ZeroBytesIsEmpty) {
  EXPECT_TRUE(PageMemory::map(0, PageMemory::Pages::kHuge).empty());
  EXPECT_TRUE(PageMemory::map(0, PageMemory::Pages::kSmall).empty());
}

}  // namespace
}  // namespace ladder
