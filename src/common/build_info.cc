#include "common/build_info.h"

#include "ladder_revision.h"  // generated at build time (src/common/CMakeLists.txt)

namespace ladder {

const char* version() { return "0.1.0"; }

const char* git_revision() { return LADDER_GIT_REVISION; }

}  // namespace ladder
