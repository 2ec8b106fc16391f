// Where Ladder finds its read-only data: $LADDER_SHARED_DIR, else the
// directory given at build time (the repository's ../shared).
#pragma once

#include <string>

namespace ladder {

// The shared data directory, without a trailing slash.
std::string shared_dir(const char* build_default);

// The default model: $LADDER_MODEL, then <shared>/models/stories260K.gguf.
// Returns an empty string when neither exists (the caller may then generate
// a synthetic model).
std::string default_model_path(const char* build_default_shared);

}  // namespace ladder
