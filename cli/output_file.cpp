#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "paratune/common/safe_file.h"

namespace paratune::cli {

void write_output_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target = path;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    target = fs::weakly_canonical(target, ec);
    if (ec) throw std::runtime_error("cannot follow the symlink (" + ec.message() + ")");
  }
  mode_t mode = 0644;
  bool keep_mode = false;
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file (only a file is replaced)");
    mode = st.st_mode & 07777;
    keep_mode = true;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  common::UniqueFd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) throw std::runtime_error("cannot open its directory (" + std::string(std::strerror(errno)) + ")");
  try {
    common::write_file_atomic(dirfd.get(), target.filename().string(), content, mode, keep_mode);
  } catch (const std::system_error& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace paratune::cli
