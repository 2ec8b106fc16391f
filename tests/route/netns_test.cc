// The network-namespace test (netns_test.sh): router, prefill host and decode
// host in three namespaces joined by veth links. It needs root; without it,
// or on a kernel that refuses namespaces, it FAILS with the reason -- a skip
// would count as a pass, and this is rung 2's acceptance test.
#include <gtest/gtest.h>

#include "test_support.h"

namespace ladder::testing {
namespace {

TEST(Netns, ThreeHostsEqualRungOneAndSurviveALostDecodeHost) {
  // Random weights over stories260K's vocabulary, slow enough per token that
  // the decode host can be killed while it streams.
  const std::string stories = shared_path("models/stories260K.gguf");
  ASSERT_FALSE(stories.empty());
  const std::string& model = slow_test_model();
  CommandResult r = run_command(
      {"bash", std::string(LADDER_TEST_SOURCE_DIR) + "/route/netns_test.sh", ladder_bin(), model});
  std::printf("%s%s", r.out.c_str(), r.err.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("netns test: PASS"), std::string::npos);
}

}  // namespace
}  // namespace ladder::testing
