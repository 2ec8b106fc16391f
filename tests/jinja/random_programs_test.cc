// Differential test of ladder::jinja against python3-jinja2 on random
// template programs (tests/jinja/random_programs.py, fixed seeds):
// whitespace control with every -/+ modifier under trim_blocks and
// lstrip_blocks, nested control flow, scoping, filters, tests and methods.
// Every program jinja2 renders must render to the same bytes; every program
// jinja2 rejects must be rejected.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "jinja/template.h"

namespace ladder::jinja {
namespace {

using ojson = nlohmann::ordered_json;

// The context is data, so every program also runs the provenance paths.
Result<std::string> render_context(const std::string& source, const ojson& context) {
  LADDER_ASSIGN_OR_RETURN(Template t, Template::parse(source));
  Value ctx = Value::from_json(context, Origin::kData);
  RenderOptions options;
  options.now = 1767225600;
  LADDER_ASSIGN_OR_RETURN(Text out, t.render(ctx.mapping(), options));
  return out.bytes();
}

void run_seed(int seed, int count) {
  std::string script = std::string(LADDER_TEST_SOURCE_DIR) + "/jinja/random_programs.py";
  testing::CommandResult r = testing::run_command({"python3", script, std::to_string(seed), std::to_string(count)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ojson cases = ojson::parse(r.out)["cases"];
  ASSERT_EQ(static_cast<int>(cases.size()), count);
  int matched = 0, rejected = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ojson& c = cases[i];
    const std::string source = c["template"].get<std::string>();
    Result<std::string> ours = render_context(source, c["context"]);
    if (!c["ok"].get<bool>()) {
      EXPECT_FALSE(ours.is_ok()) << "seed " << seed << " case " << i << ": jinja2 rejects it ("
                                 << c["error"].get<std::string>() << ") but we rendered it\ntemplate: "
                                 << ojson(source).dump();
      rejected += !ours.is_ok();
      continue;
    }
    if (!ours.is_ok()) {
      ADD_FAILURE() << "seed " << seed << " case " << i << ": " << ours.status().to_string()
                    << "\ntemplate: " << ojson(source).dump();
      continue;
    }
    EXPECT_EQ(*ours, c["output"].get<std::string>())
        << "seed " << seed << " case " << i << "\ntemplate: " << ojson(source).dump()
        << "\ncontext: " << c["context"].dump();
    matched += *ours == c["output"].get<std::string>();
  }
  std::printf("[ seed %d ] %d programs: %d identical, %d rejected by both\n", seed, count, matched, rejected);
}

TEST(ChatDifferential, RandomProgramsMatchJinja2) {
  for (int seed : {1, 2, 3}) run_seed(seed, 200);
}

}  // namespace
}  // namespace ladder::jinja
