// The ledger file and serve --ledger's choice, on hand-written entries.
#include "ladder/ledger.h"

#include <gtest/gtest.h>

#include <fstream>

#include "ladder/serving_choice.h"
#include "test_support.h"

namespace ladder::climb {
namespace {

using nlohmann::json;

json entry(const std::string& climb, int rung, const std::string& name, const std::string& decision,
           std::vector<std::string> args, const std::string& model_digest = "m1", double load = 1.0) {
  json id = {{"model_digest", "m1"}, {"tokenizer_digest", "t1"}, {"engine_revision", "r1"}};
  json fp = {{"model_digest", model_digest}, {"tokenizer_digest", "t1"}, {"engine_revision", "r1"}};
  return {{"kind", "ladder.ledger"},
          {"schema_version", kLedgerSchemaVersion},
          {"climb_id", climb},
          {"timestamp", "2026-12-01T00:00:00Z"},
          {"rung", rung},
          {"load", load},
          {"name", name},
          {"decision", decision},
          {"reason", decision + ": because"},
          {"serve_args", args},
          {"rung1_args", json::array()},
          {"model", "/m/" + name + ".gguf"},
          {"model_override", model_digest != "m1"},
          {"identity", id},
          {"fingerprint", fp},
          {"goodput", {{"gain", 0.1}, {"ci_low", 0.02}, {"ci_high", 0.2}}},
          {"quality", {{{"slice", "chat"}, {"fraction", 1.0}, {"margin", 1.0}}}},
          {"machine", {{"cores", 2}, {"cpu_model", "test cpu"}}}};
}

std::string write_ledger(const std::vector<json>& lines) {
  static int n = 0;
  const std::string path = ladder::testing::temp_dir() + "/ledger" + std::to_string(n++) + ".jsonl";
  for (const auto& l : lines) EXPECT_TRUE(append_ledger_entry(path, l).is_ok());
  return path;
}

TEST(Ledger, AppendsAndReadsBack) {
  const std::string path =
      write_ledger({entry("c1", 1, "dense", "baseline", {}),
                    entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"})});
  auto entries = load_ledger(path);
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].line, 2);
  EXPECT_EQ((*entries)[1].decision, "promoted");
  EXPECT_EQ((*entries)[1].serve_args, (std::vector<std::string>{"--max-chunk-tokens", "16"}));
  EXPECT_EQ((*entries)[1].identity.tokenizer_digest, "t1");
  const std::string shown = format_ledger(*entries);
  EXPECT_NE(shown.find("climb c1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("chunked"), std::string::npos) << shown;
  EXPECT_NE(shown.find("+10.0%"), std::string::npos) << shown;
  EXPECT_NE(shown.find("[+2.0%, +20.0%]"), std::string::npos) << shown;
  EXPECT_NE(shown.find("serving after this climb: rung 2 'chunked' (--max-chunk-tokens 16)"),
            std::string::npos)
      << shown;
}

TEST(Ledger, BadLinesAreErrorsNamingTheLine) {
  json wrong_version = entry("c1", 1, "dense", "baseline", {});
  wrong_version["schema_version"] = 99;
  auto r = load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}), wrong_version}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 2: schema_version 99"), std::string::npos)
      << r.status().message();
  json bad_decision = entry("c1", 1, "dense", "maybe", {});
  r = load_ledger(write_ledger({bad_decision}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("'decision'"), std::string::npos);
  const std::string path = ladder::testing::temp_dir() + "/garbage.jsonl";
  std::ofstream(path) << "not json\n";
  r = load_ledger(path);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 1: not a JSON object"), std::string::npos);
}

// Settings as the serve command would parse them: here "NAME VALUE" pairs.
Result<ServeSettings> pairs(const std::vector<std::string>& args) {
  ServeSettings s;
  for (size_t i = 0; i + 1 < args.size(); i += 2) s[args[i]] = args[i + 1];
  return s;
}

Result<std::string> digest_m2(const std::string&) {
  return std::string("m2");
}

const ServedIdentity kRunning{"m1", "t1", "r1"};

TEST(Ledger, VersionOneLinesReadAsLoadOneAndVersionTwoNeedsALoad) {
  json v1 = entry("c1", 1, "dense", "baseline", {});
  v1["schema_version"] = 1;
  v1.erase("load");
  json v2 = entry("c1", 2, "spec", "rejected", {"--spec", "ngram"}, "m1", 4.0);
  auto r = load_ledger(write_ledger({v1, v2}));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ((*r)[0].load, 1.0);
  EXPECT_EQ((*r)[1].load, 4.0);
  json no_load = v2;
  no_load.erase("load");
  r = load_ledger(write_ledger({no_load}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 1: 'load' must be a positive number"), std::string::npos)
      << r.status().message();
  no_load["load"] = -2;
  EXPECT_FALSE(load_ledger(write_ledger({no_load})).is_ok());
}

// A climb over two loads: the candidate rejected at 1x and promoted at 4x.
std::vector<json> two_load_climb(const std::string& id) {
  return {entry(id, 1, "dense", "baseline", {}, "m1", 1.0),
          entry(id, 2, "spec", "rejected", {"--spec", "ngram"}, "m1", 1.0),
          entry(id, 1, "dense", "baseline", {}, "m1", 4.0),
          entry(id, 2, "spec", "promoted", {"--spec", "ngram"}, "m1", 4.0)};
}

TEST(Ledger, ShowListsEachLoadsDecisionAndWhatServesAtEachLoad) {
  auto entries = load_ledger(write_ledger(two_load_climb("c1")));
  ASSERT_TRUE(entries.is_ok());
  const std::string shown = format_ledger(*entries);
  EXPECT_NE(shown.find("serving after this climb at load 1x: rung 1 'dense'"), std::string::npos) << shown;
  EXPECT_NE(shown.find("serving after this climb at load 4x: rung 2 'spec' (--spec ngram)"), std::string::npos)
      << shown;
  EXPECT_NE(shown.find("4x     spec           promoted"), std::string::npos) << shown;
  EXPECT_NE(shown.find("1x     spec           rejected"), std::string::npos) << shown;
}

TEST(ServingChoice, EachLoadServesTheDecisionMadeAtTheNearestMeasuredLoad) {
  auto entries = load_ledger(write_ledger(two_load_climb("c1")));
  ASSERT_TRUE(entries.is_ok());
  // Load 1 (the default): rejected there, so rung 1.
  ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  EXPECT_EQ(c.entry, nullptr) << c.summary;
  EXPECT_NE(c.summary.find("promoted nothing above rung 1 at load 1x"), std::string::npos) << c.summary;
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("measured loads 1x, 4x; load 1x takes the decisions made at 1x"),
            std::string::npos)
      << c.notes[0];
  // Load 4, and loads nearer 4 than 1 by ratio (3 is; 2 is exactly between: the higher wins).
  for (double load : {4.0, 8.0, 3.0, 2.0}) {
    c = choose_serving(*entries, kRunning, {}, pairs, digest_m2, load);
    ASSERT_NE(c.entry, nullptr) << load << ": " << c.summary;
    EXPECT_EQ(c.entry->name, "spec");
    EXPECT_EQ(c.entry->load, 4.0);
    EXPECT_NE(c.summary.find("at load 4x"), std::string::npos) << c.summary;
  }
  for (double load : {1.9, 0.5}) {
    c = choose_serving(*entries, kRunning, {}, pairs, digest_m2, load);
    EXPECT_EQ(c.entry, nullptr) << load << ": " << c.summary;
  }
}

TEST(ServingChoice, APromotedSplitTopologyServesTheConfigurationPromotedBeforeIt) {
  json split = entry("c1", 3, "split", "promoted", {"-t", "1"});
  split["topology"] = "disagg";
  auto entries =
      load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}),
                                entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"}), split}));
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  EXPECT_EQ((*entries)[2].topology, "disagg");
  const ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  ASSERT_NE(c.entry, nullptr) << c.summary;
  EXPECT_EQ(c.entry->name, "chunked");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("rung 3 'split' is a prefill/decode split"), std::string::npos) << c.notes[0];
  EXPECT_NE(c.notes[0].find("`ladder route`"), std::string::npos) << c.notes[0];
  EXPECT_NE(format_ledger(*entries).find("[prefill/decode split]"), std::string::npos);
  // A later one-process promotion serves again.
  entries = load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}), split,
                                      entry("c1", 4, "f32", "promoted", {"--kv-dtype", "f32"})}));
  ASSERT_TRUE(entries.is_ok());
  EXPECT_EQ(choose_serving(*entries, kRunning, {}, pairs, digest_m2).entry->name, "f32");
  json bad = split;
  bad["topology"] = "mesh";
  EXPECT_FALSE(load_ledger(write_ledger({bad})).is_ok());
}

TEST(ServingChoice, NearestLoadIsByRatioAndTiesGoUp) {
  EXPECT_EQ(nearest_load({1.0}, 7.0), 1.0);
  EXPECT_EQ(nearest_load({0.5, 1.0, 2.0}, 1.0), 1.0);
  EXPECT_EQ(nearest_load({0.5, 2.0}, 1.0), 2.0);   // equally near by ratio
  EXPECT_EQ(nearest_load({0.5, 2.0}, 0.9), 0.5);   // 0.9/0.5 = 1.8 < 2/0.9 = 2.22
  EXPECT_EQ(nearest_load({1.0, 10.0}, 3.0), 1.0);  // 3 < 10/3
  EXPECT_EQ(nearest_load({1.0, 10.0}, 3.5), 10.0);
}


TEST(ServingChoice, ServesTheLastPromotedConfigurationOfAMatchingClimb) {
  auto entries =
      load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}),
                                entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"}),
                                entry("c1", 3, "f32", "rejected", {"--kv-dtype", "f32"})}));
  ASSERT_TRUE(entries.is_ok());
  const ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  ASSERT_NE(c.entry, nullptr) << c.summary;
  EXPECT_EQ(c.entry->name, "chunked");
  EXPECT_NE(c.summary.find("serving rung 2 'chunked'"), std::string::npos);
}

json compared(json e, int rung) {
  e["compared_with"] = {{"rung", rung}, {"name", "r" + std::to_string(rung)}};
  return e;
}

json rollback(const std::string& climb, int from, const std::string& from_name, int to, const std::string& to_name) {
  return {{"kind", kRollbackKind},
          {"schema_version", 1},
          {"timestamp", "2026-12-02T00:00:00Z"},
          {"climb_id", climb},
          {"load", 1.0},
          {"from", {{"rung", from}, {"name", from_name}}},
          {"to", {{"rung", to}, {"name", to_name}}},
          {"slice", "long_context"},
          {"reason", "long_context verified 0.20 (upper bound 0.41) < margin 0.90"},
          {"evidence", {{"first_failures", {{{"request_id", "chatcmpl-1"}, {"detail", "diverged at 3"}}}}}}};
}

TEST(ServingChoice, APromotionsFallbacksAreWhatItWasComparedWithDownToRungOne) {
  auto entries = load_ledger(write_ledger(
      {entry("c1", 1, "dense", "baseline", {}), compared(entry("c1", 2, "q8", "promoted", {"--kv-dtype", "q8"}), 1),
       compared(entry("c1", 3, "q4", "rejected", {"--kv-dtype", "q4"}), 2),
       compared(entry("c1", 4, "spec", "promoted", {"--kv-dtype", "q8", "--spec", "ngram"}), 2)}));
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  const ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  ASSERT_NE(c.entry, nullptr) << c.summary;
  EXPECT_EQ(c.entry->name, "spec");
  ASSERT_EQ(c.fallbacks.size(), 2u);
  EXPECT_EQ(c.fallbacks[0]->name, "q8");
  EXPECT_EQ(c.fallbacks[1]->name, "dense");
  EXPECT_EQ(c.fallbacks[1]->decision, "baseline");
}

TEST(ServingChoice, AFallbackChainPassesOverAPromotedSplit) {
  json split = compared(entry("c1", 2, "split", "promoted", {}), 1);
  split["topology"] = "disagg";
  auto entries = load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}), split,
                                           compared(entry("c1", 3, "q8", "promoted", {"--kv-dtype", "q8"}), 2)}));
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  const ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  ASSERT_NE(c.entry, nullptr) << c.summary;
  EXPECT_EQ(c.entry->name, "q8");
  ASSERT_EQ(c.fallbacks.size(), 1u);
  EXPECT_EQ(c.fallbacks[0]->name, "dense");
}

TEST(ServingChoice, ARollbackStandsUntilANewClimb) {
  const std::vector<json> climb1 = {entry("c1", 1, "dense", "baseline", {}),
                                    compared(entry("c1", 2, "q4", "promoted", {"--kv-dtype", "q4"}), 1)};
  std::vector<json> lines = climb1;
  lines.push_back(rollback("c1", 2, "q4", 1, "dense"));
  const std::string path = write_ledger(lines);
  auto entries = load_ledger(path);  // skips the rollback line
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  EXPECT_EQ(entries->size(), 2u);
  auto rollbacks = load_rollbacks(path);
  ASSERT_TRUE(rollbacks.is_ok()) << rollbacks.status().message();
  ASSERT_EQ(rollbacks->size(), 1u);
  EXPECT_EQ((*rollbacks)[0].from_name, "q4");
  EXPECT_EQ((*rollbacks)[0].to_rung, 1);
  ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2, 1.0, *rollbacks);
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_NE(c.summary.find("what it promoted was rolled back above rung 1"), std::string::npos) << c.summary;
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(c.notes.back().find("rung 2 'q4' was rolled back"), std::string::npos) << c.notes.back();
  const std::string shown = format_rollbacks(*rollbacks);
  EXPECT_NE(shown.find("rung 2 'q4' -> rung 1 'dense'"), std::string::npos) << shown;
  EXPECT_NE(shown.find("differed: chatcmpl-1 diverged at 3"), std::string::npos) << shown;
  // A later climb that promotes q4 again serves it.
  lines.push_back(entry("c2", 1, "dense", "baseline", {}));
  lines.push_back(compared(entry("c2", 2, "q4", "promoted", {"--kv-dtype", "q4"}), 1));
  entries = load_ledger(write_ledger(lines));
  ASSERT_TRUE(entries.is_ok());
  c = choose_serving(*entries, kRunning, {}, pairs, digest_m2, 1.0, *rollbacks);
  ASSERT_NE(c.entry, nullptr) << c.summary;
  EXPECT_EQ(c.entry->climb_id, "c2");
  // A rollback line without its rungs, one that does not go down a rung
  // (serve --ledger would follow it forever) or of an unknown version is an
  // error naming its line.
  json bad = rollback("c1", 2, "q4", 1, "dense");
  bad.erase("to");
  auto r = load_rollbacks(write_ledger({bad}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 1"), std::string::npos);
  r = load_rollbacks(write_ledger({rollback("c1", 1, "dense", 2, "q4")}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("lower rung"), std::string::npos) << r.status().message();
  bad = rollback("c1", 2, "q4", 1, "dense");
  bad["schema_version"] = 9;
  r = load_rollbacks(write_ledger({bad}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("schema_version"), std::string::npos) << r.status().message();
}

TEST(ServingChoice, TheLatestMatchingClimbDecides) {
  auto entries =
      load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}),
                                entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"}),
                                entry("c2", 1, "dense", "baseline", {}),
                                entry("c2", 2, "chunked", "rejected", {"--max-chunk-tokens", "16"})}));
  ASSERT_TRUE(entries.is_ok());
  const ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_NE(c.summary.find("climb c2 matches and promoted nothing above rung 1"), std::string::npos)
      << c.summary;
}

TEST(ServingChoice, AnotherModelTokenizerOrRevisionFallsBackNamingTheField) {
  auto entries =
      load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}),
                                entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"})}));
  ASSERT_TRUE(entries.is_ok());
  for (const auto& [running, field] : std::vector<std::pair<ServedIdentity, std::string>>{
           {{"m9", "t1", "r1"}, "model_digest differs: ledger m1, this model m9"},
           {{"m1", "t9", "r1"}, "tokenizer_digest differs"},
           {{"m1", "t1", "r9"}, "engine_revision differs: ledger r1, this ladder r9"}}) {
    const ServingChoice c = choose_serving(*entries, running, {}, pairs, digest_m2);
    EXPECT_EQ(c.entry, nullptr);
    ASSERT_EQ(c.notes.size(), 1u);
    EXPECT_NE(c.notes[0].find(field), std::string::npos) << c.notes[0];
    EXPECT_NE(c.summary.find("serving rung 1"), std::string::npos);
  }
}

TEST(ServingChoice, AnotherSettingFallsBackNamingIt) {
  auto entries =
      load_ledger(write_ledger({entry("c1", 1, "dense", "baseline", {}),
                                entry("c1", 2, "chunked", "promoted", {"--max-chunk-tokens", "16"})}));
  ASSERT_TRUE(entries.is_ok());
  const ServingChoice c = choose_serving(*entries, kRunning, {{"--kv-dtype", "f32"}}, pairs, digest_m2);
  EXPECT_EQ(c.entry, nullptr);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("--kv-dtype: rung 1 measured (default), this command f32"), std::string::npos)
      << c.notes[0];
}

TEST(ServingChoice, APromotedModelFileThatChangedFallsBack) {
  auto entries = load_ledger(
      write_ledger({entry("c1", 1, "dense", "baseline", {}), entry("c1", 2, "q4", "promoted", {}, "m-q4")}));
  ASSERT_TRUE(entries.is_ok());
  ServingChoice c = choose_serving(*entries, kRunning, {}, pairs, digest_m2);
  EXPECT_EQ(c.entry, nullptr);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("is now m2 (measured m-q4)"), std::string::npos) << c.notes[0];
  c = choose_serving(*entries, kRunning, {}, pairs,
                     [](const std::string&) -> Result<std::string> { return std::string("m-q4"); });
  ASSERT_NE(c.entry, nullptr);
  EXPECT_TRUE(c.entry->model_override);
}

}  // namespace
}  // namespace ladder::climb
