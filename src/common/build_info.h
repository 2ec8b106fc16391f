// The build's identity, for fingerprints of measurements: the version and
// the source revision the binary was built from.
#pragma once

namespace ladder {

// Semantic version of Ladder, e.g. "0.1.0".
const char* version();

// `git describe --always --dirty` of the source tree at build time (a
// "-dirty" suffix marks uncommitted changes), or "unknown" outside git.
const char* git_revision();

}  // namespace ladder
