// Row-wise and element-wise kernels: RMSNorm, SiLU*mul, softmax, RoPE.
#pragma once

#include <cstdint>

namespace ladder::ops {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for `rows` rows of n.
void rms_norm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu(gate[i]) * up[i], GELU's tanh form
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (gemma).
void gelu_mul(const float* gate, const float* up, int64_t n, float* out);

// The gated FFN activations: act(gate) * up.
enum class GatedActivation { kSilu, kGeluTanh };
void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out);

// x[i] = cap * tanh(x[i] / cap), in place (gemma2's logit soft cap).
void soft_cap(float* x, int64_t n, float cap);

// In-place softmax over n values.
void softmax(float* x, int64_t n);

enum class RopeStyle {
  kNormal,  // rotate adjacent pairs (x[2i], x[2i+1]) — llama GGUF
  kNeox,    // rotate halves (x[i], x[i + rot_dims/2]) — qwen2, neox
};

// Rotates the first rot_dims of each of n_heads vectors of head_dim floats at
// position pos: angle_i = pos * inv_freq[i], i in [0, rot_dims/2). inv_freq
// already includes any frequency scaling the model declares. mscale scales
// the rotated dimensions (cos and sin both; LongRoPE's attention factor, as
// llama.cpp applies it); the rest of each head is left as it is.
void rope(float* x, int n_heads, int head_dim, int rot_dims, int64_t pos, const float* inv_freq,
          RopeStyle style, float mscale = 1.0f);

// Scalar references of the kernels above, for tests: plain loops (RMSNorm,
// SiLU and softmax in double; RoPE with the same float angles as rope()).
void rms_norm_reference(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y);
void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out);
void gelu_mul_reference(const float* gate, const float* up, int64_t n, float* out);
void soft_cap_reference(float* x, int64_t n, float cap);
void softmax_reference(float* x, int64_t n);
void rope_reference(float* x, int n_heads, int head_dim, int rot_dims, int64_t pos, const float* inv_freq,
                    RopeStyle style, float mscale = 1.0f);

}  // namespace ladder::ops
