#include "common/file_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ladder {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return not_found("cannot open " + path + ": no such file");
    return io_error("cannot open " + path + ": " + std::strerror(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error("cannot read " + path);
  return ss.str();
}

}  // namespace ladder
