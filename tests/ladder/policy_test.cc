// The climb policy: what it reads, and errors that name the key.
#include "ladder/policy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace ladder::climb {
namespace {

std::string dir_with_files() {
  static const std::string dir = [] {
    std::string d = ladder::testing::temp_dir();
    std::ofstream(d + "/w.jsonl") << "{\"prompt\": \"Once\", \"max_tokens\": 2}\n";
    std::ofstream(d + "/other.gguf") << "x";
    return d;
  }();
  return dir;
}

Result<ClimbPolicy> parse(const std::string& text) {
  return parse_climb_policy(text, "p.toml", dir_with_files());
}

void expect_error(const std::string& text, const std::vector<std::string>& fragments);

const char* kRungs = R"(
[[workload]]
path = "w.jsonl"
[[rung]]
name = "dense"
[[rung]]
name = "chunked"
args = ["--max-chunk-tokens", "16"]
)";

TEST(Policy, ReadsEverySection) {
  auto p = parse(R"(
confidence = 0.9
min_repeats = 2
max_repeats = 16
max_compare_s = 600
max_reference_errors = 0.1
min_slice_requests = 3
seed = 9
warmup_requests = 2
min_gain = 0.01
[slo]
ttft_ms = 500
e2e_ms = 3000
[quality]
verify = "exact"
margin = 0.98
[quality.default]
min_match = 0.8
[quality.slice.long]
verify = "approx"
margin = 0.9
min_divergence = 4
[[workload]]
name = "trace"
path = "w.jsonl"
args = ["--requests", "8", "--rate", "4"]
[[rung]]
name = "dense"
[[rung]]
name = "q4"
model = "other.gguf"
args = ["--spec", "ngram", "--kv-dtype", "f32"]
)");
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->confidence, 0.9);
  EXPECT_EQ(p->min_repeats, 2);
  EXPECT_EQ(p->max_repeats, 16);
  EXPECT_EQ(p->max_compare_s, 600);
  EXPECT_EQ(p->max_reference_errors, 0.1);
  EXPECT_EQ(p->min_slice_requests, 3);
  EXPECT_EQ(p->seed, 9u);
  EXPECT_EQ(p->warmup_requests, 2);
  EXPECT_EQ(p->min_gain, 0.01);
  EXPECT_EQ(slo_argument(p->slo), "ttft_ms=500,e2e_ms=3000");
  EXPECT_EQ(p->margin_for("chat").verify, harness::VerifyMode::kExact);
  EXPECT_EQ(p->margin_for("chat").margin, 0.98);
  EXPECT_EQ(p->margin_for("long").verify, harness::VerifyMode::kApprox);
  EXPECT_EQ(p->margin_for("long").margin, 0.9);
  EXPECT_EQ(p->replay_mode(), harness::VerifyMode::kApprox);
  // The approx thresholds are the harness's: [default] over the built-in
  // defaults (max_mean_kl 0.05 stays), the slice over [default].
  const harness::QualityThresholds t = p->thresholds.for_slice("long");
  EXPECT_EQ(t.min_match, 0.8);
  EXPECT_EQ(t.max_mean_kl, 0.05);
  EXPECT_EQ(t.min_divergence, 4);
  ASSERT_EQ(p->workloads.size(), 1u);
  EXPECT_EQ(p->workloads[0].name, "trace");
  EXPECT_EQ(p->workloads[0].path, dir_with_files() + "/w.jsonl");
  EXPECT_EQ(p->workloads[0].args, (std::vector<std::string>{"--requests", "8", "--rate", "4"}));
  ASSERT_EQ(p->rungs.size(), 2u);
  EXPECT_EQ(p->rungs[1].model, dir_with_files() + "/other.gguf");
  // Serve arguments are passed through as given: options the serve command
  // gains later (--spec) need no change here.
  EXPECT_EQ(p->rungs[1].args, (std::vector<std::string>{"--spec", "ngram", "--kv-dtype", "f32"}));
}

TEST(Policy, ThresholdsRoundTripThroughTheHarnessReader) {
  auto p = parse(std::string("[quality.default]\nmin_match = 0.7\n[quality.slice.rare]\nverify = \"approx\"\n"
                             "max_kl = 2.5\n") +
                 kRungs);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  auto again = harness::parse_verify_policy(p->thresholds_toml(), "written");
  ASSERT_TRUE(again.is_ok()) << again.status().message() << "\n" << p->thresholds_toml();
  EXPECT_EQ(again->for_slice("rare").max_kl, 2.5);
  EXPECT_EQ(again->for_slice("rare").min_match, 0.7);
  EXPECT_EQ(again->for_slice("other").min_match, 0.7);
}

TEST(Policy, AllExactSlicesReplayExactly) {
  auto p = parse(kRungs);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->replay_mode(), harness::VerifyMode::kExact);
  EXPECT_EQ(p->margin_for("any").margin, 1.0);
  EXPECT_EQ(p->min_repeats, 4);
  EXPECT_EQ(p->max_repeats, 32);
  EXPECT_EQ(p->workloads[0].name, "w");  // the file's stem
  EXPECT_EQ(p->loads, (std::vector<double>{1.0}));
}

TEST(Policy, LoadsAreReadSortedAndChecked) {
  auto p = parse(std::string("loads = [4, 0.5, 1]\n") + kRungs);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->loads, (std::vector<double>{0.5, 1.0, 4.0}));
  expect_error(std::string("loads = []\n") + kRungs, {"'loads' must be a non-empty array"});
  expect_error(std::string("loads = [1, 0]\n") + kRungs, {"'loads'", "load 0 is outside (0, 1e6]"});
  expect_error(std::string("loads = [2, 2.0]\n") + kRungs, {"'loads' lists a load twice"});
  expect_error(std::string("loads = [\"2\"]\n") + kRungs, {"'loads' (each load) must be a number"});
  // A workload's rate must be readable to be scaled.
  expect_error(std::string("loads = [2]\n[[workload]]\npath = \"w.jsonl\"\nargs = [\"--rate\", \"fast\"]\n") +
                   "[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\n",
               {"[[workload]] 'w' 'args'", "--rate fast is not a positive number"});
}

TEST(Policy, ADisaggRungNamesItsWorkersAndRoutersOptions) {
  auto p = parse(R"(
[[workload]]
path = "w.jsonl"
[[rung]]
name = "dense"
[[rung]]
name = "split"
topology = "disagg"
args = ["-t", "1"]
decode_args = ["--max-running", "8"]
route_args = ["--max-queue", "32"]
)");
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->rungs[0].topology, Topology::kSingle);
  EXPECT_EQ(p->rungs[1].topology, Topology::kDisagg);
  EXPECT_EQ(p->rungs[1].args, (std::vector<std::string>{"-t", "1"}));
  EXPECT_TRUE(p->rungs[1].prefill_args.empty());
  EXPECT_EQ(p->rungs[1].decode_args, (std::vector<std::string>{"--max-running", "8"}));
  EXPECT_EQ(p->rungs[1].route_args, (std::vector<std::string>{"--max-queue", "32"}));
  EXPECT_EQ(p->to_json()["rungs"][1]["topology"], "disagg");
  const std::string head = "[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\n";
  expect_error(head + "topology = \"ring\"\n", {"[[rung]] #2 'topology' is \"single\" or \"disagg\""});
  expect_error(head + "decode_args = []\n", {"[[rung]] #2", "need topology = \"disagg\""});
  expect_error(head + "topology = \"disagg\"\nargs = [\"--role\", \"both\"]\n",
               {"[[rung]] #2 'args'", "--role is set by the climb"});
  expect_error(head + "topology = \"disagg\"\ndecode_args = [\"--kv-host\", \"0.0.0.0\"]\n",
               {"'decode_args'", "--kv-host is set by the climb"});
  expect_error(head + "topology = \"disagg\"\nroute_args = [\"--decode\", \"http://x\"]\n",
               {"'route_args'", "--decode is set by the climb"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\ntopology = \"disagg\"\n[[rung]]\nname = \"b\"\n",
               {"[[rung]] #1: rung 1 is the dense server"});
}

TEST(Policy, AWorkloadAtALoadScalesItsRateOrCompressesItsArrivals) {
  using Args = std::vector<std::string>;
  auto at = [](const Args& a, double load) {
    auto r = workload_args_at_load(a, load);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? *r : Args{};
  };
  const Args rated{"--requests", "8", "--rate", "4"};
  EXPECT_EQ(at(rated, 1.0), rated);
  EXPECT_EQ(at(rated, 2.5), (Args{"--requests", "8", "--rate", "10"}));
  EXPECT_EQ(at({"--rate=3", "--arrival", "constant"}, 0.5), (Args{"--rate=1.5", "--arrival", "constant"}));
  // The trace's own arrival times: compressed by the load.
  EXPECT_EQ(at({"--requests", "8"}, 4.0), (Args{"--requests", "8", "--time-scale", "0.25"}));
  EXPECT_EQ(at({"--time-scale", "0.5"}, 2.0), (Args{"--time-scale", "0.25"}));
  EXPECT_EQ(at({"--time-scale=3"}, 0.5), (Args{"--time-scale=6"}));
  // Replay refuses both together (--rate re-draws the arrivals --time-scale would scale).
  EXPECT_FALSE(workload_args_at_load({"--time-scale", "2", "--rate", "1"}, 3.0).is_ok());
  EXPECT_FALSE(workload_args_at_load({"--rate"}, 2.0).is_ok());
  EXPECT_FALSE(workload_args_at_load({"--time-scale", "-1"}, 2.0).is_ok());
  EXPECT_EQ(load_label(0.5), "0.5x");
  EXPECT_EQ(load_label(2), "2x");
}

void expect_error(const std::string& text, const std::vector<std::string>& fragments) {
  auto p = parse(text);
  ASSERT_FALSE(p.is_ok()) << text;
  for (const auto& f : fragments) {
    EXPECT_NE(p.status().message().find(f), std::string::npos)
        << "'" << f << "' not in: " << p.status().message();
  }
}

TEST(Policy, ErrorsNameTheKey) {
  expect_error(std::string("bogus = 1\n") + kRungs, {"p.toml", "unknown key 'bogus'"});
  expect_error(std::string("confidence = 1.5\n") + kRungs, {"'confidence'", "outside"});
  expect_error(std::string("repeats = \"two\"\n") + kRungs, {"'repeats' must be an integer"});
  expect_error(std::string("[slo]\nttft = 5\n") + kRungs, {"[slo]", "unknown key 'ttft'"});
  expect_error(std::string("[quality]\nmargin = 1.5\n") + kRungs, {"[quality] 'margin'", "outside [0, 1]"});
  expect_error(std::string("[quality]\nverify = \"fuzzy\"\n") + kRungs,
               {"'verify' is \"exact\" or \"approx\""});
  expect_error(std::string("[quality]\nmin_match = 0.5\n") + kRungs,
               {"[quality]", "unknown key 'min_match'"});
  // Thresholds go through the harness's reader, which names the key too.
  expect_error(std::string("[quality.slice.long]\nmin_mach = 0.5\n") + kRungs,
               {"[quality]", "[slice.long]", "unknown key 'min_mach'"});
  expect_error(std::string("[quality.slice.long]\nmin_match = 2\n") + kRungs,
               {"[slice.long]", "'min_match'"});
}

TEST(Policy, WorkloadAndRungErrorsNameTheTable) {
  const std::string rungs = "[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\n";
  expect_error(rungs, {"no [[workload]]"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\n", {"at least one candidate"});
  expect_error("[[workload]]\npath = \"missing.jsonl\"\n" + rungs,
               {"[[workload]] #1 'path'", "no such file"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\nargs = [\"--endpoint\", \"x\"]\n" + rungs,
               {"[[workload]] #1 'args'", "--endpoint is set by the climb"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\nargs = [\"--rate\", 4]\n" + rungs,
               {"must hold strings only"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\nrate = 4\n" + rungs,
               {"[[workload]] #1", "unknown key 'rate'"});
  expect_error(
      "[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\nargs = "
      "[\"--port=9\"]\n",
      {"[[rung]] #2 'args'", "--port is set by the climb"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\n[[rung]]\nname = \"a\"\n",
               {"[[rung]] #2", "'a' is used twice"});
  expect_error("[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nargs = []\n[[rung]]\nname = \"b\"\n",
               {"[[rung]] #1", "'name' is required"});
  expect_error(
      "[[workload]]\npath = \"w.jsonl\"\n[[rung]]\nname = \"a\"\n[[rung]]\nname = \"b\"\nmodel = 3\n",
      {"[[rung]] #2 'model' must be a string"});
  expect_error("workload = 3\n", {"'workload' must be [[workload]] tables"});
  expect_error("this is not toml", {"p.toml"});
}

}  // namespace
}  // namespace ladder::climb
