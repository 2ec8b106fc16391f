// Grammar-constrained decoding: the cost of the token mask per generated
// token against the cost of sampling that token without one, at vocabulary
// 512 (stories260K) and 32k (llama-2-tiny-random). All figures are CPU time
// of the benchmark thread.
//
//   build/bench/grammar_bench --benchmark_counters_tabular=true
//
// Each benchmark replays one fixed token sequence that a seeded random walk
// drew from the grammar (only allowed tokens), and per token measures
//   mask_us    GrammarMatcher::fill_mask + apply_token_mask + accept
//   sample_us  engine::Sampler::sample on random logits of the same width
//              (temperature 1, the OpenAI defaults: a full softmax and draw)
//   ratio      mask_us / sample_us, both timed in the same iteration
//   greedy_us  the same Sampler at temperature 0 (argmax only), and
//   ratio_greedy  mask_us / greedy_us: against the cheapest possible sampling.
// Warm: every state the walk meets was classified before timing (the cache
// a second request with the same grammar finds). Cold: each iteration
// compiles the grammar afresh, so its masks include classifying the states
// (the first request's cost); compile_ms is the compile alone.
//
// BM_RightRecursion/N reads N bytes of `root ::= "a" root | "a"` with the
// Earley recogniser alone: us_per_byte stays flat as N grows when the work
// is linear (Leo's items, earley.h; without them it grew with N squared per
// byte), items_per_byte is the chart's size over N.
#include <benchmark/benchmark.h>
#include <time.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/paths.h"
#include "engine/sampler.h"
#include "gguf/gguf_file.h"
#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace ladder;

// CPU time of this thread: the machine is shared, and wall time would count
// the neighbours' work as ours.
double cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// A typical structured-output schema: strings, an enum, bounded integers, a
// nested array of objects.
constexpr const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40},
  "kind": {"enum": ["cat", "dog", "bird"]},
  "age": {"type": "integer", "minimum": 0, "maximum": 30},
  "friends": {"type": "array", "maxItems": 4, "items": {"type": "object",
    "properties": {"name": {"type": "string"}, "years": {"type": "number"}},
    "required": ["name", "years"], "additionalProperties": false}}},
  "required": ["name", "kind", "age", "friends"], "additionalProperties": false})";

std::string shared(const std::string& rel) {
  return shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/" + rel;
}

std::shared_ptr<const grammar::TokenVocabulary> vocabulary(const std::string& model) {
  auto file = gguf::GgufFile::open(shared("models/" + model));
  if (!file.is_ok()) return nullptr;
  auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!tok.is_ok()) return nullptr;
  return grammar::TokenVocabulary::from_tokenizer(*tok.value());
}

std::string schema_gbnf() {
  return grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(kSchema)).value();
}

// A seeded walk through the grammar: allowed tokens only, single-byte ones
// half the time, steering to the end after 150 tokens.
std::vector<int32_t> walk(const std::shared_ptr<const grammar::CompiledGrammar>& g) {
  const grammar::TokenVocabulary& v = g->vocabulary();
  grammar::GrammarMatcher m(g);
  std::mt19937_64 rng(42);
  std::vector<uint64_t> mask(v.mask_words());
  std::vector<int32_t> out;
  while (out.size() < 400 && !m.is_terminated()) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed;
    std::vector<int32_t> single;
    std::vector<int32_t> closing;
    for (int32_t id = 0; id < v.size(); ++id) {
      if (!((mask[id / 64] >> (id % 64)) & 1)) continue;
      allowed.push_back(id);
      if (v.piece(id).size() == 1) single.push_back(id);
      if (v.is_end(id) || v.piece(id) == "\"" || v.piece(id) == "}" || v.piece(id) == "]")
        closing.push_back(id);
    }
    int32_t pick = allowed[rng() % allowed.size()];
    if (out.size() > 150 && !closing.empty()) {
      pick = closing[rng() % closing.size()];
    } else if (rng() % 2 == 0 && !single.empty()) {
      pick = single[rng() % single.size()];
    }
    m.accept(pick);
    out.push_back(pick);
  }
  return out;
}

void BM_MaskVsSampling(benchmark::State& state, const std::string& model, bool cold) {
  auto vocab = vocabulary(model);
  if (!vocab) {
    state.SkipWithError(("missing ../shared/models/" + model).c_str());
    return;
  }
  const std::string gbnf = schema_gbnf();
  auto compiled = grammar::CompiledGrammar::from_gbnf(gbnf, vocab).value();
  const std::vector<int32_t> tokens = walk(compiled);  // also classifies every state it meets

  std::vector<float> logits(static_cast<size_t>(vocab->size()));
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& x : logits) x = normal(rng);
  std::vector<float> masked(logits.size());
  std::vector<uint64_t> mask(vocab->mask_words());
  engine::Sampler sampler(engine::SamplingParams{}, 1);
  engine::SamplingParams greedy_params;
  greedy_params.temperature = 0.0f;
  engine::Sampler greedy(greedy_params, 1);

  double mask_total = 0;
  double sample_total = 0;
  double greedy_total = 0;
  double compile_total = 0;
  for (auto _ : state) {
    const double c0 = cpu_us();
    if (cold) compiled = grammar::CompiledGrammar::from_gbnf(gbnf, vocab).value();
    compile_total += cpu_us() - c0;
    grammar::GrammarMatcher m(compiled);
    for (int32_t token : tokens) {
      masked = logits;  // the sampler's own copy of the row, not timed
      const double t0 = cpu_us();
      m.fill_mask(mask);
      grammar::apply_token_mask(mask, masked);
      m.accept(token);
      mask_total += cpu_us() - t0;
    }
    benchmark::DoNotOptimize(masked.data());
    const double t1 = cpu_us();
    for (size_t i = 0; i < tokens.size(); ++i) benchmark::DoNotOptimize(sampler.sample(logits, {}, {}));
    const double t2 = cpu_us();
    for (size_t i = 0; i < tokens.size(); ++i) benchmark::DoNotOptimize(greedy.sample(logits, {}, {}));
    sample_total += t2 - t1;
    greedy_total += cpu_us() - t2;
  }
  const double n = static_cast<double>(state.iterations()) * static_cast<double>(tokens.size());
  state.counters["vocab"] = vocab->size();
  state.counters["tokens"] = static_cast<double>(tokens.size());
  state.counters["mask_us"] = mask_total / n;
  state.counters["sample_us"] = sample_total / n;
  state.counters["ratio"] = mask_total / sample_total;
  state.counters["greedy_us"] = greedy_total / n;
  state.counters["ratio_greedy"] = mask_total / greedy_total;
  if (cold) state.counters["compile_ms"] = compile_total / static_cast<double>(state.iterations()) / 1000.0;
  state.counters["states"] = compiled->fsm().n_states();
  state.counters["classified"] = static_cast<double>(compiled->n_classified());
}

BENCHMARK_CAPTURE(BM_MaskVsSampling, warm_512, std::string("stories260K.gguf"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskVsSampling, warm_32k, std::string("llama-2-tiny-random.gguf"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskVsSampling, cold_512, std::string("stories260K.gguf"), true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskVsSampling, cold_32k, std::string("llama-2-tiny-random.gguf"), true)
    ->Unit(benchmark::kMillisecond);

void BM_RightRecursion(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  auto compiled = grammar::CompiledGrammar::from_gbnf(R"(root ::= "a" root | "a")", vocabulary("stories260K.gguf"));
  if (!compiled.is_ok()) {
    state.SkipWithError(compiled.status().to_string().c_str());
    return;
  }
  const grammar::GrammarFsm& fsm = compiled.value()->fsm();
  grammar::EarleyRecognizer rec(fsm);
  double us = 0.0;
  for (auto _ : state) {
    const double t0 = cpu_us();
    rec.start(fsm.root_state());
    for (int i = 0; i < n; ++i) {
      if (!rec.advance('a')) {
        state.SkipWithError("the recogniser refused a byte of its grammar");
        break;
      }
    }
    us += cpu_us() - t0;
  }
  state.counters["us_per_byte"] = us / static_cast<double>(state.iterations()) / n;
  state.counters["items_per_byte"] = static_cast<double>(rec.n_items()) / n;
}

BENCHMARK(BM_RightRecursion)->Arg(1024)->Arg(8192)->Arg(65536)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
