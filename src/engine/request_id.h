// RequestId: the engine-wide identity of a request, assigned at submit.
#pragma once

#include <cstdint>

namespace ladder::engine {

using RequestId = uint64_t;

}  // namespace ladder::engine
