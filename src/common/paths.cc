#include "common/paths.h"

#include <cstdlib>
#include <filesystem>

namespace ladder {

std::string shared_dir(const char* build_default) {
  if (const char* env = std::getenv("LADDER_SHARED_DIR"); env != nullptr && *env != '\0') {
    std::string dir = env;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  return build_default;
}

std::string default_model_path(const char* build_default_shared) {
  if (const char* env = std::getenv("LADDER_MODEL"); env != nullptr && *env != '\0') return env;
  std::string candidate = shared_dir(build_default_shared) + "/models/stories260K.gguf";
  std::error_code ec;
  if (std::filesystem::exists(candidate, ec)) return candidate;
  return {};
}

}  // namespace ladder
