#include "ops/hadamard.h"

#include <cmath>

namespace ladder::ops {

int64_t hadamard_block(int64_t head_dim) {
  return head_dim & -head_dim;
}

void hadamard_rotate(float* x, int64_t n_vectors, int64_t head_dim) {
  const int64_t b = hadamard_block(head_dim);
  if (b < 2) return;
  const float norm = 1.0f / std::sqrt(static_cast<float>(b));
  const int64_t n = n_vectors * head_dim;
  for (int64_t s = 0; s < n; s += b) {
    float* y = x + s;
    // The fast transform: log2(b) butterfly passes, then the normalisation.
    for (int64_t len = 1; len < b; len *= 2) {
      for (int64_t i = 0; i < b; i += 2 * len) {
        for (int64_t j = i; j < i + len; ++j) {
          const float a = y[j], c = y[j + len];
          y[j] = a + c;
          y[j + len] = a - c;
        }
      }
    }
    for (int64_t j = 0; j < b; ++j) y[j] *= norm;
  }
}

}  // namespace ladder::ops
