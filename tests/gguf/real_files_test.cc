// The reader against the real GGUF files in ../shared (facts from
// ../shared/models/README.md and ../shared/tokenizers/README.md).
#include <gtest/gtest.h>

#include <string>

#include "gguf/gguf_file.h"
#include "test_support.h"

namespace ladder::gguf {
namespace {

using ladder::testing::shared_path;

TEST(RealFiles, Stories260KHeaderAndMetadata) {
  auto file = GgufFile::open(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->file_size(), 1185376u);
  EXPECT_EQ(file->data_offset() % 32, 0u);

  EXPECT_EQ(file->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(file->get_uint("llama.embedding_length").value(), 64u);
  EXPECT_EQ(file->get_uint("llama.block_count").value(), 5u);
  EXPECT_EQ(file->get_uint("llama.attention.head_count").value(), 8u);
  EXPECT_EQ(file->get_uint("llama.attention.head_count_kv").value(), 4u);
  EXPECT_EQ(file->get_uint("llama.feed_forward_length").value(), 172u);
  // The README says context 512 (the training config); the converter wrote its
  // own default into the file, so only its presence and type are checked.
  EXPECT_TRUE(file->get_int("llama.context_length").is_ok());

  auto tokens = file->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
  EXPECT_EQ(tokens->size(), 512u);
  auto scores = file->get_float_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.is_ok()) << scores.status().to_string();
  EXPECT_EQ(scores->size(), 512u);

  // Wrong types and missing keys name the key.
  auto wrong = file->get_uint("general.architecture");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("general.architecture"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("string"), std::string::npos);
  auto missing = file->get_string("no.such.key");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(file->get_uint_or("no.such.key", 7).value(), 7u);
  EXPECT_FALSE(file->get_uint_or("general.architecture", 7).is_ok());
}

TEST(RealFiles, Stories260KTensors) {
  auto file = GgufFile::open(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  // token_embd, output_norm, output, and 9 per layer x 5 layers.
  ASSERT_EQ(file->tensors().size(), 48u);

  const TensorInfo* embd = file->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, TensorType::kF32);
  EXPECT_EQ(embd->shape, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(embd->n_bytes, 64u * 512u * 4u);

  const TensorInfo* wq = file->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->shape, (std::vector<uint64_t>{64, 64}));
  const TensorInfo* wk = file->find_tensor("blk.4.attn_k.weight");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->shape, (std::vector<uint64_t>{64, 32}));  // 4 KV heads x head_dim 8
  const TensorInfo* up = file->find_tensor("blk.2.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->shape, (std::vector<uint64_t>{64, 172}));
  const TensorInfo* down = file->find_tensor("blk.2.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<uint64_t>{172, 64}));
  const TensorInfo* norm = file->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape, (std::vector<uint64_t>{64}));
  EXPECT_EQ(file->find_tensor("blk.5.attn_q.weight"), nullptr);

  for (const TensorInfo& t : file->tensors()) {
    EXPECT_EQ(t.type, TensorType::kF32) << t.name;
    EXPECT_EQ(t.offset % file->alignment(), 0u) << t.name;
    EXPECT_LE(file->data_offset() + t.offset + t.n_bytes, file->file_size()) << t.name;
    ASSERT_NE(t.data, nullptr) << t.name;
  }
}

TEST(RealFiles, Stories260KDigestMatchesReadme) {
  auto file = GgufFile::open(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->digest(), "047bf46455a544931cff6fef14d7910154c56afbc23ab1c5e56a72e69912c04b");
  // Lazy and cached: the same string object on the second call.
  EXPECT_EQ(&file->digest(), &file->digest());
}

TEST(RealFiles, LlamaTinyRandomOpensAsF16) {
  auto file = GgufFile::open(shared_path("models/llama-2-tiny-random.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->digest(), "81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb");
  auto tokens = file->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
  EXPECT_EQ(tokens->size(), 32000u);
  size_t n_f16 = 0;
  for (const TensorInfo& t : file->tensors()) n_f16 += t.type == TensorType::kF16 ? 1 : 0;
  EXPECT_GT(n_f16, 0u);
  const TensorInfo* embd = file->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->shape, (std::vector<uint64_t>{8, 32000}));
}

TEST(RealFiles, VocabularyFilesOpen) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-falcon.gguf",
                           "ggml-vocab-deepseek-llm.gguf"}) {
    auto file = GgufFile::open(shared_path(std::string("tokenizers/") + name));
    ASSERT_TRUE(file.is_ok()) << name << ": " << file.status().to_string();
    EXPECT_TRUE(file->get_string_array("tokenizer.ggml.tokens").is_ok()) << name;
    EXPECT_LE(file->data_offset(), file->file_size()) << name;
  }
}

TEST(RealFiles, MissingFileIsNotFound) {
  auto file = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace ladder::gguf
