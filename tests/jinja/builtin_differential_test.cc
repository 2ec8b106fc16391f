// Differential test of every filter, test and method against python3-jinja2
// (configured as Hugging Face does) at the edges real chat templates meet:
// none, undefined, empty string / list / dict, mixed-type values, and filter
// chains over them (tests/jinja/builtin_cases.py generates and renders the
// cases). Every case jinja2 renders must render to the same bytes; every case
// jinja2 rejects must be rejected. The context is passed as data, so the same
// cases also run every operation's provenance path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/builtins.h"
#include "jinja/template.h"
#include "test_support.h"

namespace ladder::jinja {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& reference() {
  static const ojson cases = [] {
    std::string script = std::string(LADDER_TEST_SOURCE_DIR) + "/jinja/builtin_cases.py";
    testing::CommandResult r = testing::run_command({"python3", script});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? ojson::parse(r.out) : ojson::object();
  }();
  return cases;
}

TEST(BuiltinDifferential, CasesCoverEveryBuiltin) {
  const ojson& ref = reference();
  ASSERT_TRUE(ref.contains("names"));
  auto covered = [&](const ojson& list) {
    std::set<std::string> names;
    for (const auto& n : list) names.insert(n.get<std::string>());
    return names;
  };
  std::set<std::string> filters = covered(ref["names"]["filters"]);
  for (const std::string& f : filter_names()) EXPECT_TRUE(filters.count(f)) << "no cases for filter '" << f << "'";
  std::set<std::string> tests = covered(ref["names"]["tests"]);
  for (const std::string& t : test_names()) EXPECT_TRUE(tests.count(t)) << "no cases for test '" << t << "'";
  const std::pair<const char*, Kind> kinds[] = {{"str", Kind::kString}, {"dict", Kind::kDict}, {"list", Kind::kList}};
  for (const auto& [key, kind] : kinds) {
    std::set<std::string> methods = covered(ref["names"]["methods"][key]);
    for (const std::string& m : method_names(kind)) {
      EXPECT_TRUE(methods.count(m)) << "no cases for " << key << "." << m << "()";
    }
  }
}

TEST(BuiltinDifferential, EdgeInputsMatchJinja2) {
  const ojson& ref = reference();
  ASSERT_TRUE(ref.contains("cases"));
  Dict context = Value::from_json(ref["context"], Origin::kData).mapping();
  RenderOptions options;
  options.now = 1767225600;
  int identical = 0, both_rejected = 0, failures = 0;
  for (const ojson& c : ref["cases"]) {
    const std::string source = c["template"].get<std::string>();
    Result<Text> ours = [&]() -> Result<Text> {
      LADDER_ASSIGN_OR_RETURN(Template t, Template::parse(source));
      return t.render(context, options);
    }();
    bool ok = true;
    if (!c["ok"].get<bool>()) {
      ok = !ours.is_ok();
      EXPECT_FALSE(ours.is_ok()) << source << "\n  jinja2: " << c["error"].get<std::string>()
                                 << "\n  ours:   " << ojson(ours.is_ok() ? ours->bytes() : "").dump();
      both_rejected += ok;
    } else if (!ours.is_ok()) {
      ok = false;
      ADD_FAILURE() << source << "\n  jinja2: " << ojson(c["output"].get<std::string>()).dump()
                    << "\n  ours:   " << ours.status().to_string();
    } else {
      ok = ours->bytes() == c["output"].get<std::string>();
      EXPECT_EQ(ours->bytes(), c["output"].get<std::string>()) << source;
      identical += ok;
    }
    failures += !ok;
  }
  std::printf("[ builtins ] %zu cases: %d identical, %d rejected by both, %d differ\n", ref["cases"].size(), identical,
              both_rejected, failures);
}

}  // namespace
}  // namespace ladder::jinja
