#include "engine/model_draft.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "common/check.h"
#include "engine/ngram_draft.h"
#include "gguf/requantize.h"
#include "kv/kv_format.h"

namespace ladder::engine {
namespace {

// The lowest id among the largest logits (the sampler's greedy rule).
int32_t argmax(std::span<const float> row) {
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// The target requantized to Q4_0 in a temporary file, mapped and then
// unlinked (the mapping keeps the data).
Result<std::unique_ptr<gguf::GgufFile>> requantize_to_q4(const gguf::GgufFile& target) {
  static std::atomic<int> counter{0};
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      fmt::format("ladder-self-q4-{}-{}.gguf", static_cast<long>(getpid()), counter++);
  gguf::RequantizeOptions options;
  options.dtype = TensorType::kQ4_0;
  // Rows that do not fill Q4_0 blocks take llama.cpp's nearest fitting type.
  options.fallback.kind = gguf::Fallback::Kind::kAuto;
  auto stats = gguf::requantize_file(target, path.string(), options);
  if (!stats.is_ok()) {
    return Status(stats.status().code(), "self-q4 draft: requantizing the target failed: " + stats.status().message());
  }
  auto file = gguf::GgufFile::open(path.string());
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  if (!file.is_ok()) return file.status();
  return std::make_unique<gguf::GgufFile>(std::move(file).value());
}

}  // namespace

Status check_same_vocabulary(const gguf::GgufFile& draft, const model::LlamaModel& draft_model,
                             const gguf::GgufFile& target, const model::LlamaModel& target_model) {
  const int64_t nd = draft_model.config().n_vocab;
  const int64_t nt = target_model.config().n_vocab;
  if (nd != nt) {
    return invalid_argument(fmt::format("the draft model {} has a vocabulary of {} tokens; the target {} has {}",
                                        draft.path(), nd, target.path(), nt));
  }
  constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
  if (draft.find(kTokens) == nullptr || target.find(kTokens) == nullptr) return Status::ok();
  auto td = draft.get_string_array(kTokens);
  auto tt = target.get_string_array(kTokens);
  if (!td.is_ok()) return td.status();
  if (!tt.is_ok()) return tt.status();
  const size_t n = std::min(td->size(), tt->size());
  for (size_t i = 0; i < n; ++i) {
    if ((*td)[i] != (*tt)[i]) {
      return invalid_argument(fmt::format("the draft model {} does not share the target's vocabulary: token {} is "
                                          "'{}' in the draft and '{}' in the target",
                                          draft.path(), i, (*td)[i], (*tt)[i]));
    }
  }
  if (td->size() != tt->size()) {
    return invalid_argument(fmt::format("the draft model {} lists {} tokenizer tokens; the target lists {}",
                                        draft.path(), td->size(), tt->size()));
  }
  return Status::ok();
}

Result<std::unique_ptr<ModelDraft>> ModelDraft::create(const DraftSpec& spec, const model::LlamaModel& target,
                                                       const gguf::GgufFile& target_file,
                                                       const ModelDraftOptions& options) {
  std::unique_ptr<ModelDraft> d(new ModelDraft());
  d->name_ = spec.to_string();
  switch (spec.kind) {
    case DraftSpec::Kind::kDraftModel: {
      auto file = gguf::GgufFile::open(spec.path);
      if (!file.is_ok()) return Status(file.status().code(), "draft model: " + file.status().message());
      d->file_ = std::make_unique<gguf::GgufFile>(std::move(file).value());
      auto m = model::LlamaModel::load(*d->file_, target.serving_context());
      if (!m.is_ok()) return Status(m.status().code(), "draft model: " + m.status().message());
      d->owned_ = std::move(m).value();
      LADDER_RETURN_IF_ERROR(check_same_vocabulary(*d->file_, *d->owned_, target_file, target));
      d->model_ = d->owned_.get();
      break;
    }
    case DraftSpec::Kind::kSelfQ4: {
      LADDER_ASSIGN_OR_RETURN(d->file_, requantize_to_q4(target_file));
      auto m = model::LlamaModel::load(*d->file_, target.serving_context());
      if (!m.is_ok()) return Status(m.status().code(), "self-q4 draft: " + m.status().message());
      d->owned_ = std::move(m).value();
      d->model_ = d->owned_.get();
      break;
    }
    case DraftSpec::Kind::kEarlyExit:
      if (spec.n_layers < 1 || spec.n_layers > target.config().n_layers) {
        return invalid_argument(fmt::format("early-exit:{}: the target has {} layers; L must be in [1, {}]",
                                            spec.n_layers, target.config().n_layers, target.config().n_layers));
      }
      d->model_ = &target;
      d->n_layers_ = spec.n_layers;
      break;
    default:
      return invalid_argument("a model draft needs draft:FILE, self-q4 or early-exit:L");
  }
  if (d->n_layers_ == 0) d->n_layers_ = d->model_->config().n_layers;
  const model::ModelConfig& mc = d->model_->config();
  // The draft's pool is planned as the engine's is (staging slots included).
  EngineConfig plan;
  plan.n_kv_blocks = options.n_kv_blocks;
  plan.kv_memory_bytes = options.kv_memory_bytes;
  plan.block_size = options.block_size;
  plan.kv_dtype = options.kv_dtype;
  plan.scheduler = options.scheduler;
  auto shape = plan_kv_shape(static_cast<int>(d->n_layers_), static_cast<int>(mc.n_kv_heads),
                             static_cast<int>(mc.head_dim), plan);
  if (!shape.is_ok()) return Status(shape.status().code(), "the draft's KV pool: " + shape.status().message());
  LADDER_ASSIGN_OR_RETURN(std::unique_ptr<kv::KvStorage> storage, kv::make_arena_storage(*shape));
  d->kv_ = std::make_unique<kv::KvCacheManager>(std::move(storage), /*prefix_caching=*/false);
  return d;
}

ModelDraft::~ModelDraft() = default;

void ModelDraft::release(RequestId id) {
  if (kv_->contains(id)) kv_->remove(id);
  seen_.erase(id);
}

void ModelDraft::propose(std::span<DraftInput> inputs, ops::ThreadPool& pool) {
  const model::ModelConfig& mc = model_->config();
  const auto n_vocab = static_cast<size_t>(mc.n_vocab);
  // Catch-up: each sequence's tokens past the longest prefix its KV still
  // describes (at least the last token, whose logits give the first draft).
  std::vector<DraftInput*> drafting;
  std::vector<model::BatchSequence> batch;
  for (DraftInput& in : inputs) {
    in.out.clear();
    in.n_caught_up = 0;
    const auto len = static_cast<int64_t>(in.tokens.size());
    const int64_t k = std::min<int64_t>(in.k, mc.context_length - len + 1);
    if (len < 1 || k < 1) continue;
    if (!kv_->contains(in.id)) kv_->add(in.id, kv::BlockKey{});
    std::vector<int32_t>& seen = seen_[in.id];
    const auto limit = static_cast<size_t>(len - 1);
    size_t common = 0;
    while (common < std::min(seen.size(), limit) && seen[common] == in.tokens[common]) ++common;
    seen.resize(common);
    kv_->truncate(in.id, static_cast<int64_t>(common));
    // Positions the draft writes: the catch-up, then k - 1 proposed tokens.
    if (!kv_->allocate(in.id, len + k - 1)) {
      kv_->release(in.id);  // no room: this sequence goes without a draft
      seen.clear();
      continue;
    }
    in.k = static_cast<int32_t>(k);
    in.out.reserve(static_cast<size_t>(k));
    drafting.push_back(&in);
    model::BatchSequence b;
    b.tokens = in.tokens.subspan(common);
    in.n_caught_up = static_cast<int64_t>(b.tokens.size()) - 1;
    b.start_pos = static_cast<int64_t>(common);
    b.block_table = kv_->block_table(in.id);
    b.logits = model::BatchSequence::Logits::kLast;
    batch.push_back(b);
  }
  while (!drafting.empty()) {
    logits_.resize(drafting.size() * n_vocab);
    const Status st = model_->forward_layers(batch, kv_->layers(), logits_, pool, n_layers_);
    if (!st.is_ok()) {
      // Positions and tables were checked above; a failure drops the drafts.
      for (DraftInput& in : inputs) in.out.clear();
      for (DraftInput* in : drafting) release(in->id);
      return;
    }
    std::vector<DraftInput*> next;
    std::vector<model::BatchSequence> next_batch;
    for (size_t r = 0; r < drafting.size(); ++r) {
      DraftInput& in = *drafting[r];
      std::vector<int32_t>& seen = seen_[in.id];
      seen.insert(seen.end(), batch[r].tokens.begin(), batch[r].tokens.end());
      in.out.push_back(argmax(std::span(logits_).subspan(r * n_vocab, n_vocab)));
      if (static_cast<int32_t>(in.out.size()) >= in.k) continue;
      model::BatchSequence b;
      b.tokens = std::span(in.out).last(1);
      b.start_pos = static_cast<int64_t>(seen.size());
      b.block_table = kv_->block_table(in.id);
      b.logits = model::BatchSequence::Logits::kLast;
      next.push_back(&in);
      next_batch.push_back(b);
    }
    drafting = std::move(next);
    batch = std::move(next_batch);
  }
}

}  // namespace ladder::engine

namespace ladder::engine {

ModelDraftOptions draft_options_for(const EngineConfig& ec) {
  ModelDraftOptions o;
  o.n_kv_blocks = ec.n_kv_blocks;
  o.kv_memory_bytes = ec.kv_memory_bytes;
  o.block_size = ec.block_size;
  o.kv_dtype = ec.kv_dtype;
  o.scheduler = ec.scheduler;
  return o;
}

Result<std::shared_ptr<Draft>> make_draft(const DraftSpec& spec, const model::LlamaModel& target,
                                          const gguf::GgufFile& target_file, const ModelDraftOptions& options) {
  switch (spec.kind) {
    case DraftSpec::Kind::kNone: return std::shared_ptr<Draft>();
    case DraftSpec::Kind::kNgram: return std::shared_ptr<Draft>(std::make_shared<NgramDraft>());
    default: {
      LADDER_ASSIGN_OR_RETURN(std::unique_ptr<ModelDraft> d, ModelDraft::create(spec, target, target_file, options));
      return std::shared_ptr<Draft>(std::move(d));
    }
  }
}

}  // namespace ladder::engine
