// Pieces of a synthetic GGUF shared by the random models (synth.cc) and the
// models whose weights are set by construction (retrieval.cc): the
// vocabulary, the llama.* hyper-parameters and weight tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "common/status.h"
#include "common/tensor_type.h"
#include "gguf/gguf_writer.h"
#include "model/synth.h"

namespace ladder::model::synth_gguf {

// Copies every tokenizer.* key of options.vocab_from, or adds the built-in
// byte-level vocabulary of options.n_vocab tokens. Returns the vocabulary
// size (with vocab_from, the tokenizer's).
Result<int64_t> add_vocabulary(gguf::GgufWriter& w, const SynthOptions& options);

// general.architecture = options.arch, general.name and the ARCH.* shapes
// of `options` with this vocabulary size and RoPE base (rotating whole heads).
void add_model_metadata(gguf::GgufWriter& w, const SynthOptions& options, int64_t n_vocab,
                        double rope_freq_base);

// Writes row r ([n_in] floats) of a matrix into `out`.
using RowFill = std::function<void(int64_t r, float* out)>;

// A matrix [n_out][n_in] made row by row (a large one is never held in F32),
// stored as `type`.
Status add_matrix(gguf::GgufWriter& w, const std::string& name, TensorType type, int64_t n_in, int64_t n_out,
                  const RowFill& fill);

// A vector of n floats, stored as F32 (norm weights).
Status add_vector(gguf::GgufWriter& w, const std::string& name, std::span<const float> values);

}  // namespace ladder::model::synth_gguf
