// The retrieval model: a two-layer Llama whose weights are set by
// construction, not trained or random, so that its correct continuation of
// any prompt is known. It performs induction: when every earlier occurrence
// of the current token was followed by the same token, it predicts that
// token. A prompt that introduces a rare sequence early and repeats its first
// token at the end is continued with the rest of the sequence, at any
// distance up to the context (4096 by default, up to 16384). A KV
// approximation that drops or blurs early evidence therefore fails visibly.
//
// Residual stream (dim 256 by default; wider ones leave the rest zero), in subspaces:
//   A [0, 64)    the current token's code: a random +-1 vector per token
//   B [64, 128)  the previous token's code (written by layer 0)
//   C [128, 192) the retrieved token's code (written by layer 1)
//   192          a constant 1, the source of position-only queries and keys
// Heads: 2 query heads of dim 128 sharing 1 KV head (GQA); head 1 has a zero
// query and its output is discarded. FFNs are zero. RoPE rotates whole heads
// with freq_base 1e10, so rotary pairs 0..19 turn fast enough to tell every
// offset apart and pairs 32..63 turn by at most 0.17 rad over 16384
// positions, which leaves content matching there unchanged.
//   Layer 0, previous-token head: q and k are constants in pairs 0..19, k
//     turned back by one position's angle, so the score peaks at offset 1
//     (by at least 24 logits over every other offset up to 16384, computed
//     at generation); its value copies A into B.
//   Layer 1, induction head: q = A (current code) and k = B (previous code)
//     in pairs 32..63, 64 logits for a matching code; its value copies the
//     attended position's A into C.
//   Output: logits = codes . C, 32 for the retrieved token.
// When a token's earlier occurrences have different successors the head
// averages them, and the most frequent successor usually wins; a token seen
// for the first time retrieves noise.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "model/synth.h"

namespace ladder::model {

inline constexpr int64_t kRetrievalMaxContext = 16384;

// The preset: the fixed shapes above, F32, context 4096.
SynthOptions retrieval_options();

// Smallest score gap (logits) between offset 1 and any other offset
// 0..context-1 of the previous-token head, as built.
double retrieval_previous_token_gap(int64_t context_length);

// Writes the model. The shapes may grow past retrieval_options()'s, the
// extra capacity inert (zero): more heads of dim 128 (dim = 128 x heads),
// KV heads dividing them, more layers (blocks past the second add nothing to
// the residual), any FFN width (every FFN is zero). The construction lives
// in query head 0, KV head 0 and the first 193 residual dimensions, so a
// widened model retrieves exactly as the default one does, at the per-token
// cost of a trained model of its shapes (dense kernels do not skip zeros).
// Anything else is kInvalidArgument.
Status write_retrieval_model(const SynthOptions& options, const std::string& path,
                             const SynthProgress& progress = {});

}  // namespace ladder::model
