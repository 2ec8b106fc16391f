// Requantizing a GGUF model: every 2-D weight matrix is converted to a target
// type through F32 (quant.h's dequantizers, quantize.h's quantizers); the
// metadata, the tokenizer and every other tensor (norms, biases, RoPE
// factors) are copied unchanged. Which type each tensor gets follows
// llama.cpp's conventions unless told otherwise, so the file loads there too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "gguf/gguf_file.h"

namespace ladder::gguf {

// What to do with a matrix whose row length is not a multiple of its target
// type's block size.
struct Fallback {
  enum class Kind {
    kRefuse,  // an error naming the tensor
    kAuto,    // llama.cpp's choice: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 if that does not fit
    kType,    // this type (which must fit)
  } kind = Kind::kRefuse;
  TensorType type = TensorType::kF16;
};

struct RequantizeOptions {
  TensorType dtype = TensorType::kQ8_0;  // weight matrices
  // output.weight (token_embd.weight when the output head is tied). nullopt:
  // llama.cpp's rule: a quantized dtype other than Q8_0 gives Q6_K when the
  // rows fit 256-element blocks, else Q8_0; Q8_0 and float dtypes stay.
  std::optional<TensorType> output_dtype;
  std::optional<TensorType> embd_dtype;  // token_embd.weight when untied; nullopt: dtype
  Fallback fallback;
  int threads = 0;  // <= 0: every core
};

// F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K: the types a file can be
// requantized to (and that Ladder's kernels read).
bool is_requantize_target(TensorType type);
// Parses a target name ("q4_k", "F16"); kInvalidArgument listing the choices.
Result<TensorType> parse_requantize_target(std::string_view name);
// Parses a --fallback value: "refuse", "auto" or a target type name.
Result<Fallback> parse_fallback(std::string_view value);

// One tensor of the output file.
struct TensorPlan {
  std::string name;
  TensorType from = TensorType::kF32;
  TensorType to = TensorType::kF32;
  std::vector<uint64_t> shape;  // ggml order
  bool matrix = false;          // a weight matrix (else copied as it is)
  bool fell_back = false;       // its rows did not fit the wanted type's blocks
};

// Decides every tensor's type. Errors: an unsupported target, a matrix whose
// rows do not fit under Fallback::kRefuse (or fit no fallback), a matrix to
// convert whose type cannot be read.
Result<std::vector<TensorPlan>> plan_requantize(const GgufFile& in, const RequantizeOptions& options);

struct RequantizeStats {
  uint64_t bytes_in = 0;   // tensor data read
  uint64_t bytes_out = 0;  // tensor data written
  int converted = 0;       // matrices whose type changed
  int copied = 0;          // tensors copied byte for byte
  int fell_back = 0;
};

// Called on the calling thread as work completes: elements done and in all.
using RequantizeProgress = std::function<void(uint64_t done, uint64_t total, const std::string& tensor)>;

// Writes the requantized model to out_path (through a temporary file renamed
// at the end, so a failed run leaves no partial model). The metadata gains
// general.file_type (llama.cpp's numbering) and general.quantization_version.
// Errors: those of plan_requantize, out_path naming the input, I/O.
Result<RequantizeStats> requantize_file(const GgufFile& in, const std::string& out_path,
                                        const RequantizeOptions& options,
                                        const RequantizeProgress& progress = {});

}  // namespace ladder::gguf
