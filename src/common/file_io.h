// Whole-file reading, with an error that names the path.
#pragma once

#include <string>

#include "common/status.h"

namespace ladder {

// The file's bytes. Errors: kNotFound when it does not exist, kIo when it
// cannot be read.
Result<std::string> read_file(const std::string& path);

}  // namespace ladder
