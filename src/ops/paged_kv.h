// PagedKv: the KV cache of every layer as the forward pass reads it -- one
// paged layer for K and one for V per model layer. Any storage (the kv
// module's pool, a test's own arena, a dense per-sequence buffer) hands the
// model this view; the model knows nothing else about where blocks live.
#pragma once

#include <vector>

#include "ops/attention.h"

namespace ladder::ops {

struct PagedKv {
  std::vector<PagedKvLayer> k;  // [n_layers]
  std::vector<PagedKvLayer> v;  // [n_layers]
};

}  // namespace ladder::ops
