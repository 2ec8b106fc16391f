// Tokenizer throughput on ../shared/text/war-and-peace.txt (3.2 MB) for the
// llama-spm (SentencePiece) and gpt-2 (byte-level BPE) vocabularies.
//
//   build-tok/bench/tokenizer_bench --benchmark_counters_tabular=true
//
// Encode/whole: the book as one text (repeated words hit the per-call cache).
// Encode/chunks: the book cut into 4 KiB prompts, each encoded on its own,
// closer to serving. Decode: the book's ids back to text. bytes_per_second is
// input text bytes for encode and output text bytes for decode, per CPU
// second (the machine is shared; wall time includes waiting for a core).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/paths.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

using ladder::tokenizer::Tokenizer;

std::string shared(const std::string& rel) { return ladder::shared_dir(LADDER_DEFAULT_SHARED_DIR) + "/" + rel; }

const std::string& book() {
  static const std::string text = [] {
    std::ifstream in(shared("text/war-and-peace.txt"), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

const Tokenizer* load(const std::string& vocab) {
  static std::vector<std::unique_ptr<Tokenizer>> keep;
  auto file = ladder::gguf::GgufFile::open(shared("tokenizers/ggml-vocab-" + vocab + ".gguf"));
  if (!file.is_ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.is_ok()) return nullptr;
  keep.push_back(std::move(tok).value());
  return keep.back().get();
}

void BM_EncodeWhole(benchmark::State& state, const std::string& vocab) {
  const Tokenizer* tok = load(vocab);
  if (tok == nullptr || book().empty()) {
    state.SkipWithError("missing ../shared/tokenizers vocabulary or ../shared/text/war-and-peace.txt");
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->encode(book(), false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * book().size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["bytes_per_token"] = static_cast<double>(book().size()) / static_cast<double>(n_tokens);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EncodeChunks(benchmark::State& state, const std::string& vocab) {
  const Tokenizer* tok = load(vocab);
  if (tok == nullptr || book().empty()) {
    state.SkipWithError("missing ../shared/tokenizers vocabulary or ../shared/text/war-and-peace.txt");
    return;
  }
  constexpr size_t kChunk = 4096;
  std::string_view text = book();
  size_t n_tokens = 0;
  for (auto _ : state) {
    n_tokens = 0;
    for (size_t pos = 0; pos < text.size(); pos += kChunk) {
      auto ids = tok->encode(text.substr(pos, kChunk), false, false);
      n_tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Decode(benchmark::State& state, const std::string& vocab) {
  const Tokenizer* tok = load(vocab);
  if (tok == nullptr || book().empty()) {
    state.SkipWithError("missing ../shared/tokenizers vocabulary or ../shared/text/war-and-peace.txt");
    return;
  }
  const auto ids = tok->encode(book(), false, false);
  size_t out_bytes = 0;
  for (auto _ : state) {
    std::string text = tok->decode(ids);
    out_bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out_bytes));
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_EncodeWhole, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_EncodeWhole, gpt_2, std::string("gpt-2"))->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_EncodeChunks, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_EncodeChunks, gpt_2, std::string("gpt-2"))->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Decode, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, gpt_2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
