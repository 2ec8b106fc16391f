// ModelDraft: a draft that is a model run greedily beside the target, with
// KV of its own (a paged pool sized like the target's, no prefix caching):
//   draft:FILE    a separate GGUF whose vocabulary is the target's (checked);
//   self-q4       the target's own weights requantized to Q4_0 at load
//                 (gguf/requantize.h), so drafting reads ~1/4 of the bytes;
//   early-exit:L  the target's first L layers, then its output norm and head
//                 (LlamaModel::forward_layers); shares the target's weights.
// Each step it catches up on the tokens it has not seen (the prompt at first,
// then the one to three tokens verification added), then proposes k tokens
// by argmax, one batched forward per token over every drafting sequence.
// What it keeps per sequence is the token list its KV describes; positions
// past the first disagreement with the sequence are truncated, so rejected
// draft tokens never leak blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "engine/draft.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache_manager.h"
#include "model/llama_model.h"

namespace ladder::engine {

struct ModelDraftOptions {
  // The draft's KV pool: n_kv_blocks when > 0, else as many as fit
  // kv_memory_bytes.
  int32_t n_kv_blocks = 0;
  size_t kv_memory_bytes = size_t{64} << 20;
  int block_size = 16;
  TensorType kv_dtype = TensorType::kF16;
  // The target's step budget: a staged format's staging slots are sized by it.
  SchedulerConfig scheduler;
};

class ModelDraft final : public Draft {
 public:
  // spec: kDraftModel, kSelfQ4 or kEarlyExit. target / target_file: the
  // served model and its file (must outlive the draft). Errors: a draft file
  // that does not load, a vocabulary that differs from the target's (naming
  // the first difference), L outside [1, n_layers], a KV pool that does not
  // fit, a requantization failure.
  static Result<std::unique_ptr<ModelDraft>> create(const DraftSpec& spec, const model::LlamaModel& target,
                                                    const gguf::GgufFile& target_file,
                                                    const ModelDraftOptions& options);
  ~ModelDraft() override;

  std::string name() const override { return name_; }
  void propose(std::span<DraftInput> inputs, ops::ThreadPool& pool) override;
  void release(RequestId id) override;

  const model::LlamaModel& model() const { return *model_; }
  int64_t n_layers() const { return n_layers_; }
  // Blocks the draft's KV holds now (tests check that none leak).
  int32_t kv_blocks_used() const { return kv_->stats().blocks_used; }

 private:
  ModelDraft() = default;

  std::string name_;
  std::unique_ptr<gguf::GgufFile> file_;       // the draft's own weights (draft:FILE, self-q4)
  std::unique_ptr<model::LlamaModel> owned_;   // bound to file_
  const model::LlamaModel* model_ = nullptr;
  int64_t n_layers_ = 0;
  std::unique_ptr<kv::KvCacheManager> kv_;
  std::unordered_map<RequestId, std::vector<int32_t>> seen_;  // tokens whose KV the draft holds
  std::vector<float> logits_;
};

// kOk when the two files describe the same vocabulary: equal sizes and, when
// both carry tokenizer.ggml.tokens, equal token strings; else
// kInvalidArgument naming the first difference.
Status check_same_vocabulary(const gguf::GgufFile& draft, const model::LlamaModel& draft_model,
                             const gguf::GgufFile& target, const model::LlamaModel& target_model);

}  // namespace ladder::engine

namespace ladder::engine {

// Options for a draft beside an engine configured as `ec`: as many KV blocks
// as the engine's pool (or as fit the same memory), same block size and dtype.
ModelDraftOptions draft_options_for(const EngineConfig& ec);

// The draft `spec` names, for this target: an NgramDraft, a ModelDraft, or
// null for DraftSpec::Kind::kNone. Errors: those of ModelDraft::create.
Result<std::shared_ptr<Draft>> make_draft(const DraftSpec& spec, const model::LlamaModel& target,
                                          const gguf::GgufFile& target_file, const ModelDraftOptions& options);

}  // namespace ladder::engine
