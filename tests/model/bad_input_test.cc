// Bad model files and bad batches get clear errors, never a crash.
#include <gtest/gtest.h>

#include <functional>

#include "gguf/gguf_writer.h"
#include "model/synth.h"
#include "model_test_util.h"
#include "test_support.h"

namespace ladder::testing {
namespace {

std::string tiny_model_path() {
  static const std::string path = [] {
    model::SynthOptions o;  // defaults: the tiny shapes, built-in vocabulary
    std::string p = temp_dir() + "/tiny_ok.gguf";
    Status st = model::write_synthetic_model(o, p);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return p;
  }();
  return path;
}

// Copies the tiny model, letting `edit` change metadata and tensors.
struct Edit {
  std::function<void(std::string& key, gguf::Value& value)> metadata;
  std::function<bool(gguf::TensorInfo& info)> tensor;  // false: drop the tensor
};

std::string rewrite(const std::string& name, const Edit& edit) {
  auto src = gguf::GgufFile::open(tiny_model_path());
  EXPECT_TRUE(src.is_ok());
  gguf::GgufWriter w;
  for (auto [key, value] : src->metadata()) {
    if (edit.metadata) edit.metadata(key, value);
    w.set(key, value);
  }
  for (gguf::TensorInfo info : src->tensors()) {
    std::vector<uint8_t> bytes(info.data, info.data + info.n_bytes);
    if (edit.tensor && !edit.tensor(info)) continue;
    EXPECT_TRUE(w.add_tensor(info.name, info.type, info.shape, std::move(bytes)).is_ok());
  }
  const std::string path = temp_dir() + "/" + name + ".gguf";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

Status load_status(const std::string& path) {
  auto file = gguf::GgufFile::open(path);
  if (!file.is_ok()) return file.status();
  auto m = model::LlamaModel::load(*file);
  return m.is_ok() ? Status::ok() : m.status();
}

TEST(ModelBadInput, TinyModelLoads) { EXPECT_TRUE(load_status(tiny_model_path()).is_ok()); }

TEST(ModelBadInput, UnknownArchitecture) {
  auto path = rewrite("arch", {.metadata = [](std::string& key, gguf::Value& v) {
    if (key == "general.architecture") v = gguf::Value::make_string("mamba");
  }});
  Status st = load_status(path);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("mamba"), std::string::npos) << st.message();
}

TEST(ModelBadInput, MissingTensor) {
  auto path = rewrite("missing", {.tensor = [](gguf::TensorInfo& t) { return t.name != "blk.1.ffn_up.weight"; }});
  Status st = load_status(path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("blk.1.ffn_up.weight"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("missing"), std::string::npos) << st.message();
}

TEST(ModelBadInput, ShapeMismatch) {
  // Swap the two dimensions of a non-square matrix.
  auto path = rewrite("shape", {.tensor = [](gguf::TensorInfo& t) {
    if (t.name == "blk.0.ffn_gate.weight") std::swap(t.shape[0], t.shape[1]);
    return true;
  }});
  Status st = load_status(path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("blk.0.ffn_gate.weight"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("shape"), std::string::npos) << st.message();
}

TEST(ModelBadInput, MissingHyperParameter) {
  auto path = rewrite("nohp", {.metadata = [](std::string& key, gguf::Value&) {
    if (key == "llama.block_count") key = "llama.block_count_renamed";
  }});
  Status st = load_status(path);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("block_count"), std::string::npos) << st.message();
}

TEST(ModelBadInput, PromptLongerThanContext) {
  auto m = load_model(tiny_model_path());
  ASSERT_TRUE(m.model);
  const int64_t ctx = m.model->config().context_length;
  std::vector<int32_t> prompt(static_cast<size_t>(ctx + 1), 5);
  model::DenseKv kv(m.model->config(), 1, ctx + 16);
  model::BatchSequence seq;
  seq.tokens = prompt;
  seq.block_table = kv.block_table(0);
  std::vector<float> logits(static_cast<size_t>(m.model->config().n_vocab));
  ops::ThreadPool pool(1);
  Status st = m.model->forward({&seq, 1}, kv.buffers(), logits, pool);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("context"), std::string::npos) << st.message();
}

TEST(ModelBadInput, TokenOutsideVocabulary) {
  auto m = load_model(tiny_model_path());
  ASSERT_TRUE(m.model);
  std::vector<int32_t> prompt = {1, static_cast<int32_t>(m.model->config().n_vocab)};
  model::DenseKv kv(m.model->config(), 1, 16);
  model::BatchSequence seq;
  seq.tokens = prompt;
  seq.block_table = kv.block_table(0);
  std::vector<float> logits(static_cast<size_t>(m.model->config().n_vocab));
  ops::ThreadPool pool(1);
  EXPECT_EQ(m.model->forward({&seq, 1}, kv.buffers(), logits, pool).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ladder::testing
