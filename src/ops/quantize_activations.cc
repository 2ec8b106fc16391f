// Row-wise quantization of activations for the integer kernels: the scalar
// reference that quantize_activations_simd() matches bit for bit.
#include <algorithm>
#include <cmath>

#include "ops/matmul_internal.h"

namespace ladder::ops::detail {

void quantize_activations(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                          float* xsum) {
  const int64_t nb = n_in / kActBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* v = x + r * n_in + b * kActBlock;
      int8_t* q = xq + r * n_in + b * kActBlock;
      float amax = 0.0f;
      for (int j = 0; j < kActBlock; ++j) amax = std::max(amax, std::fabs(v[j]));
      const float d = amax / 127.0f;
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int j = 0; j < kActBlock; ++j) {
        // The clamp guards x*id rounding to just above 127.
        const float s = std::nearbyint(std::clamp(v[j] * id, -127.0f, 127.0f));
        const int qi = static_cast<int>(s);
        q[j] = static_cast<int8_t>(qi);
        xu[r * n_in + b * kActBlock + j] = static_cast<uint8_t>(qi + 128);
        sum += qi;
      }
      xd[r * nb + b] = d;
      xsum[r * nb + b] = d * static_cast<float>(sum);
    }
  }
}

}  // namespace ladder::ops::detail
