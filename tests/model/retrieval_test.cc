// The retrieval model (model/retrieval.h) against the induction rule computed
// directly on token ids (induction.h), never against the model's own ideas:
// teacher-forced at every position where the rule is defined, greedy through
// the real engine on a rare-evidence prompt at 4096 context, and failing
// visibly when the early evidence is cut away. An independent float64
// implementation (llama_reference.py) checks that the construction is a
// plain Llama forward pass, not a quirk of Ladder's.
#include "model/retrieval.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "induction.h"
#include "model/model_bundle.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

std::string stories_vocab() {
  return shared_path("models/stories260K.gguf");
}
std::string llama2_vocab() {
  return shared_path("tokenizers/ggml-vocab-llama-spm.gguf");
}

std::string write_retrieval(const std::string& vocab_from, TensorType dtype = TensorType::kF32,
                            int64_t context = 4096) {
  model::SynthOptions o = model::retrieval_options();
  o.vocab_from = vocab_from;
  o.dtype = dtype;
  o.context_length = context;
  const std::string path = temp_dir() + "/retrieval_" + std::to_string(std::hash<std::string>{}(vocab_from)) +
                           "_" + std::string(tensor_type_name(dtype)) + "_" + std::to_string(context) +
                           ".gguf";
  Status st = model::write_synthetic_model(o, path);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return path;
}

// Argmax of the logits after every token of seq, evaluated in prefill chunks
// (only the argmax is kept, so a 32k vocabulary costs no memory).
std::vector<int32_t> argmax_after_each(const model::LlamaModel& m, const std::vector<int32_t>& seq,
                                       TensorType kv_dtype, ops::ThreadPool& pool) {
  constexpr size_t kChunk = 256;
  const int64_t n_vocab = m.config().n_vocab;
  model::DenseKv kv(m.config(), 1, static_cast<int64_t>(seq.size()), 16, kv_dtype);
  std::vector<float> logits(kChunk * static_cast<size_t>(n_vocab));
  std::vector<int32_t> out;
  for (size_t start = 0; start < seq.size(); start += kChunk) {
    const size_t n = std::min(kChunk, seq.size() - start);
    model::BatchSequence s;
    s.tokens = std::span<const int32_t>(seq.data() + start, n);
    s.start_pos = static_cast<int64_t>(start);
    s.block_table = kv.block_table(0);
    s.logits = model::BatchSequence::Logits::kAll;
    Status st = m.forward({&s, 1}, kv.buffers(), logits, pool);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    for (size_t r = 0; r < n; ++r)
      out.push_back(argmax(logits.data() + r * static_cast<size_t>(n_vocab), n_vocab));
  }
  return out;
}

struct RuleCheck {
  int checked = 0, agreed = 0;
  int64_t max_distance = 0;  // farthest evidence among agreeing checks
};

// Compares the model's prediction after each position with the rule's, where
// the rule is defined; distance = positions back to the nearest earlier
// occurrence of the current token.
RuleCheck check_rule(const std::vector<int32_t>& seq, const std::vector<int32_t>& predicted) {
  RuleCheck c;
  const auto targets = induction_targets(seq);
  std::unordered_map<int32_t, int64_t> last_seen;
  for (size_t t = 0; t < seq.size(); ++t) {
    if (targets[t]) {
      ++c.checked;
      if (predicted[t] == *targets[t]) {
        ++c.agreed;
        c.max_distance = std::max(c.max_distance, static_cast<int64_t>(t) - last_seen[seq[t]]);
      }
    }
    last_seen[seq[t]] = static_cast<int64_t>(t);
  }
  return c;
}

// The model's prediction after every position of seq against the rule, with
// this KV type; at least min_checked positions must have a defined rule.
void expect_follows_rule(const model::LlamaModel& m, const std::vector<int32_t>& seq, TensorType kv,
                         int min_checked) {
  ops::ThreadPool pool(2);
  const RuleCheck c = check_rule(seq, argmax_after_each(m, seq, kv, pool));
  std::printf("KV %s: %d of %d defined positions follow the rule (farthest evidence %lld back)\n",
              std::string(tensor_type_name(kv)).c_str(), c.agreed, c.checked,
              static_cast<long long>(c.max_distance));
  EXPECT_GE(c.checked, min_checked);
  EXPECT_EQ(c.agreed, c.checked);
}

TEST(Retrieval, PresetHasTheStatedShapes) {
  auto m = load_model(write_retrieval(stories_vocab()));
  ASSERT_TRUE(m.model);
  const auto& c = m.model->config();
  EXPECT_EQ(c.dim, 256);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 2);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rope_dims, 128);  // whole heads rotate, as llama.cpp requires of llama models
  EXPECT_EQ(c.context_length, 4096);
  EXPECT_EQ(c.n_vocab, 512);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(m.file->get_string("ladder.synth.weights").value(), "retrieval");
}

// The previous-token head's score as a function of the offset, computed here
// from the file's weights (embedding -> RMSNorm -> q, k of head 0 -> RoPE in
// double): it peaks at offset 1, by at least 24 logits over every other
// offset up to 16384, whatever the token.
TEST(Retrieval, PreviousTokenHeadPeaksAtOffsetOneAcrossTheContext) {
  auto m = load_model(write_retrieval(stories_vocab()));
  ASSERT_TRUE(m.model);
  const auto& c = m.model->config();
  auto f32 = [&](const char* name) {
    const gguf::TensorInfo* t = m.file->find_tensor(name);
    EXPECT_TRUE(t != nullptr && t->type == TensorType::kF32) << name;
    return reinterpret_cast<const float*>(t->data);
  };
  const float* embd = f32("token_embd.weight");
  const float* norm = f32("blk.0.attn_norm.weight");
  const float* wq = f32("blk.0.attn_q.weight");
  const float* wk = f32("blk.0.attn_k.weight");
  const double base = m.file->get_float("llama.rope.freq_base").value();
  for (int32_t token : {5, 300}) {
    const float* x = embd + token * c.dim;
    double ss = 0;
    for (int64_t i = 0; i < c.dim; ++i) ss += double(x[i]) * x[i];
    const double inv_rms = 1.0 / std::sqrt(ss / c.dim + c.rms_eps);
    std::vector<double> q(c.head_dim), k(c.head_dim);
    for (int64_t r = 0; r < c.head_dim; ++r) {
      for (int64_t i = 0; i < c.dim; ++i) {
        q[r] += wq[r * c.dim + i] * x[i] * inv_rms * norm[i];
        k[r] += wk[r * c.dim + i] * x[i] * inv_rms * norm[i];
      }
    }
    // A query rotated by p_q * w and a key by p_k * w meet at R(p_q w)q . R(p_k w)k
    // = q . R(-offset * w)k, pair by pair; divided by sqrt(head_dim).
    auto score = [&](int64_t offset) {
      double s = 0;
      for (int64_t i = 0; i < c.head_dim / 2; ++i) {
        const double a = offset * std::pow(base, -2.0 * i / c.head_dim), ca = std::cos(a), sa = std::sin(a);
        s += q[2 * i] * (ca * k[2 * i] + sa * k[2 * i + 1]) +
             q[2 * i + 1] * (-sa * k[2 * i] + ca * k[2 * i + 1]);
      }
      return s / std::sqrt(static_cast<double>(c.head_dim));
    };
    const double peak = score(1);
    double runner_up = -1e30;
    for (int64_t d = 0; d < model::kRetrievalMaxContext; ++d) {
      if (d != 1) runner_up = std::max(runner_up, score(d));
    }
    std::printf("token %d: score at offset 1 %.2f, best other offset %.2f\n", token, peak, runner_up);
    EXPECT_GE(peak - runner_up, 23.9) << "token " << token;
  }
}

TEST(Retrieval, RejectsWhatTheConstructionCannotHonour) {
  model::SynthOptions o = model::retrieval_options();
  o.vocab_from = stories_vocab();
  o.dim = 512;  // two heads of 256
  Status st = model::write_synthetic_model(o, temp_dir() + "/bad.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("heads of dim 128"), std::string::npos) << st.message();
  o = model::retrieval_options();
  o.vocab_from = stories_vocab();
  o.tied_output = true;
  st = model::write_synthetic_model(o, temp_dir() + "/bad.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("separate output head"), std::string::npos) << st.message();
  o = model::retrieval_options();
  o.vocab_from = stories_vocab();
  o.n_layers = 1;
  st = model::write_synthetic_model(o, temp_dir() + "/bad.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  o = model::retrieval_options();
  o.context_length = model::kRetrievalMaxContext + 1;
  st = model::write_synthetic_model(o, temp_dir() + "/bad.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("16384"), std::string::npos) << st.message();
}

// Every log-probability after each of 48 tokens against the float64 numpy
// implementation, and that implementation's own argmax follows the rule.
TEST(Retrieval, MatchesFloat64ReferenceAndTheRule) {
  const std::string path = write_retrieval(stories_vocab());
  auto m = load_model(path);
  ASSERT_TRUE(m.model);
  const auto seq = phrase_walk_prompt(512, 10, 2, 48, 7);
  const auto ref = reference_logprobs(path, seq);
  ops::ThreadPool pool(2);
  const double worst = max_abs_difference(model_logprobs(*m.model, seq, pool), ref);
  std::vector<int32_t> ref_argmax;
  for (const auto& lp : ref) {
    ref_argmax.push_back(static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin()));
  }
  std::printf("max |logprob - float64 reference| over %zu positions: %.2e\n", seq.size(), worst);
  EXPECT_LT(worst, 1e-3);
  const RuleCheck c = check_rule(seq, ref_argmax);
  EXPECT_GE(c.checked, 20);
  EXPECT_EQ(c.agreed, c.checked);
}

// A 4096-token walk over a 512-token vocabulary: each token recurs ~8 times
// among thousands of competing keys; the prediction after every position
// where the rule is defined must be the rule's, with F32 and F16 KV.
TEST(RetrievalSlow, FollowsTheRuleEverywhereAt4096) {
  auto m = load_model(write_retrieval(stories_vocab()));
  ASSERT_TRUE(m.model);
  const auto seq = phrase_walk_prompt(512, 480, 24, 4096, 11);
  for (TensorType kv : {TensorType::kF32, TensorType::kF16}) expect_follows_rule(*m.model, seq, kv, 3000);
}

// Any vocabulary size: the 32,000-token Llama-2 vocabulary, with 600 tokens of
// it in play so that they recur.
TEST(RetrievalSlow, FollowsTheRuleWithTheLlama2Vocabulary) {
  auto m = load_model(write_retrieval(llama2_vocab()));
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.model->config().n_vocab, 32000);
  expect_follows_rule(*m.model, phrase_walk_prompt(32000, 600, 30, 2048, 13), TensorType::kF16, 1000);
}

// Wider and deeper (6 heads of 128 with their own KV heads, 3 layers, FFN
// 512), the extra capacity zero: in F32 the default shapes' log-probabilities
// at every position, and in F32 and Q8_0 weights the rule's prediction
// wherever it is defined (elsewhere near-ties decide). Its cost per token is
// that of a dense model of its shapes.
TEST(Retrieval, WidenedModelPredictsAsTheDefaultOne) {
  model::SynthOptions o = model::retrieval_options();
  o.vocab_from = stories_vocab();
  o.dim = 768, o.n_heads = 6, o.n_kv_heads = 6, o.n_layers = 3, o.ffn_dim = 512;
  const auto seq = phrase_walk_prompt(512, 60, 8, 256, 19);
  ops::ThreadPool pool(2);
  auto base = load_model(write_retrieval(stories_vocab()));
  ASSERT_TRUE(base.model);
  const auto base_lp = model_logprobs(*base.model, seq, pool);
  for (TensorType dtype : {TensorType::kF32, TensorType::kQ8_0}) {
    o.dtype = dtype;
    const std::string path = temp_dir() + "/retrieval_wide_" + std::string(tensor_type_name(dtype)) + ".gguf";
    Status st = model::write_synthetic_model(o, path);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto wide = load_model(path);
    ASSERT_TRUE(wide.model);
    EXPECT_EQ(wide.model->config().dim, 768);
    EXPECT_EQ(wide.model->config().n_layers, 3);
    const auto lp = model_logprobs(*wide.model, seq, pool);
    ASSERT_EQ(lp.size(), base_lp.size());
    int same_argmax = 0;
    for (size_t t = 0; t < lp.size(); ++t) {
      same_argmax += std::max_element(lp[t].begin(), lp[t].end()) - lp[t].begin() ==
                     std::max_element(base_lp[t].begin(), base_lp[t].end()) - base_lp[t].begin();
    }
    const double worst = max_abs_difference(lp, base_lp);
    std::printf("%s: %d of %zu argmaxes as the default shapes', max |logprob difference| %.2e\n",
                std::string(tensor_type_name(dtype)).c_str(), same_argmax, lp.size(), worst);
    if (dtype == TensorType::kF32) {
      EXPECT_LT(worst, 1e-3);
    }
    expect_follows_rule(*wide.model, seq, TensorType::kF16, 100);
  }
}

// Quantized weights keep the construction: its weights are sparse rows that
// every block format represents nearly exactly.
class RetrievalDtype : public ::testing::TestWithParam<TensorType> {};

TEST_P(RetrievalDtype, FollowsTheRule) {
  auto m = load_model(write_retrieval(stories_vocab(), GetParam()));
  ASSERT_TRUE(m.model);
  expect_follows_rule(*m.model, phrase_walk_prompt(512, 300, 15, 1024, 17), TensorType::kF16, 500);
}

INSTANTIATE_TEST_SUITE_P(Types, RetrievalDtype,
                         ::testing::Values(TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                                           TensorType::kQ6_K, TensorType::kQ5_K, TensorType::kQ4_K,
                                           TensorType::kQ5_0, TensorType::kQ4_0),
                         [](const auto& p) { return std::string(tensor_type_name(p.param)); });

// A rare-evidence prompt: real prose (War and Peace, in the model's own
// tokenization) with a sequence of tokens that occur nowhere else introduced
// near the start, and its first token repeated at the end.
struct RarePrompt {
  std::vector<int32_t> tokens;
  std::vector<int32_t> entity;
};

RarePrompt rare_prompt(const tokenizer::Tokenizer& tok, int64_t n_vocab, size_t filler_tokens,
                       uint64_t seed) {
  const std::string text = read_file(shared_path("text/war-and-peace.txt"));
  std::vector<int32_t> filler = tok.encode(text.substr(20000, filler_tokens * 12), false, false);
  EXPECT_GE(filler.size(), filler_tokens);
  filler.resize(std::min(filler.size(), filler_tokens));
  std::unordered_set<int32_t> used(filler.begin(), filler.end());
  std::vector<int32_t> unused;
  for (int32_t t = 3; t < n_vocab; ++t) {
    if (used.count(t) == 0) unused.push_back(t);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(unused.begin(), unused.end(), rng);
  RarePrompt p;
  p.entity.assign(unused.begin(), unused.begin() + std::min<size_t>(10, unused.size()));
  p.tokens = {tok.bos_id()};
  p.tokens.insert(p.tokens.end(), filler.begin(), filler.begin() + 16);
  p.tokens.insert(p.tokens.end(), p.entity.begin(), p.entity.end());
  p.tokens.insert(p.tokens.end(), filler.begin() + 16, filler.end());
  p.tokens.push_back(p.entity[0]);
  return p;
}

std::vector<int32_t> engine_greedy(const model::LlamaModel& m, std::vector<int32_t> prompt, int n) {
  engine::EngineConfig cfg;
  cfg.n_threads = 2;
  cfg.n_kv_blocks = static_cast<int32_t>(m.config().context_length / cfg.block_size + 2);
  auto eng = engine::Engine::create(m, cfg);
  EXPECT_TRUE(eng.is_ok()) << eng.status().to_string();
  if (!eng.is_ok()) return {};
  engine::Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = n;
  auto sub = (*eng)->submit(std::move(r));
  EXPECT_TRUE(sub.is_ok()) << sub.status().to_string();
  if (!sub.is_ok()) return {};
  std::vector<int32_t> out;
  while (auto ev = sub->stream->next_for(std::chrono::seconds(300))) {
    if (ev->kind != engine::StreamEvent::Kind::kToken) {
      EXPECT_EQ(ev->finish, engine::FinishReason::kLength) << ev->status.to_string();
      break;
    }
    out.push_back(ev->token.token);
  }
  return out;
}

struct RareCase {
  std::string vocab;  // stories260K or llama2
  int64_t context;
};

void PrintTo(const RareCase& c, std::ostream* os) {
  *os << c.vocab << " at " << c.context;
}

class RareEvidence : public ::testing::TestWithParam<RareCase> {};

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids) s += (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

TEST_P(RareEvidence, ReproducedAcrossTheContextAndLostWhenTheWindowDropsIt) {
  const RareCase rc = GetParam();
  auto bundle = model::ModelBundle::load(write_retrieval(
      rc.vocab == "stories260K" ? stories_vocab() : llama2_vocab(), TensorType::kF32, rc.context));
  ASSERT_TRUE(bundle.is_ok()) << bundle.status().to_string();
  const auto& m = *bundle->model;
  constexpr int kGenerate = 16;
  // Prose to within ~100 tokens of the context (after BOS, the entity, the
  // cue and the continuation).
  const RarePrompt p =
      rare_prompt(*bundle->tokenizer, m.config().n_vocab, static_cast<size_t>(rc.context) - 128, 21);
  ASSERT_EQ(p.entity.size(), 10u);
  ASSERT_GE(p.tokens.size(), static_cast<size_t>(rc.context) - 120);
  const auto expected = induction_continuation(p.tokens, kGenerate);
  // The rule reproduces the rest of the entity (and perhaps more).
  ASSERT_GE(expected.size(), 9u);
  EXPECT_TRUE(std::equal(p.entity.begin() + 1, p.entity.end(), expected.begin()));

  const auto got = engine_greedy(m, p.tokens, kGenerate);
  ASSERT_EQ(got.size(), static_cast<size_t>(kGenerate));
  std::printf("%s, prompt %zu tokens, evidence %zu back: entity %s\n  expected %s\n  got      %s\n",
              rc.vocab.c_str(), p.tokens.size(), p.tokens.size() - 18, ids_string(p.entity).c_str(),
              ids_string(expected).c_str(), ids_string(got).c_str());
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + static_cast<long>(expected.size())), expected);

  // Sink + recent window: BOS and the last 2048 tokens. The entity is gone,
  // and so is the continuation.
  std::vector<int32_t> window = {p.tokens.front()};
  window.insert(window.end(), p.tokens.end() - 2048, p.tokens.end());
  const auto blind = engine_greedy(m, window, kGenerate);
  ASSERT_EQ(blind.size(), static_cast<size_t>(kGenerate));
  std::printf("  windowed %s\n", ids_string(blind).c_str());
  int reproduced = 0;
  for (size_t i = 0; i + 1 < p.entity.size(); ++i) reproduced += blind[i] == p.entity[i + 1] ? 1 : 0;
  EXPECT_NE(blind[0], p.entity[1]);
  EXPECT_LE(reproduced, 1) << "the windowed run still reproduced the entity";
}

auto rare_case_name = [](const auto& p) { return p.param.vocab + "_" + std::to_string(p.param.context); };
INSTANTIATE_TEST_SUITE_P(Prompts, RareEvidence, ::testing::Values(RareCase{"stories260K", 4096}), rare_case_name);
// The sanitizer stage leaves the Slow suites (attention over thousands of
// positions) to the release suite.
INSTANTIATE_TEST_SUITE_P(Slow, RareEvidence,
                         ::testing::Values(RareCase{"llama2", 4096}, RareCase{"stories260K", 8192},
                                           RareCase{"stories260K", 16384}),
                         rare_case_name);

}  // namespace
}  // namespace ladder::testing
