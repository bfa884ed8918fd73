#include "paratune/tuning/scan/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace paratune::tuning::scan {

size_t StringSource::read_at(uint64_t offset, char* buf, size_t n) {
  if (offset >= content_.size()) return 0;
  const size_t k = std::min<uint64_t>(n, content_.size() - offset);
  std::memcpy(buf, content_.data() + offset, k);
  return k;
}

FileSource::FileSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw std::system_error(err, std::generic_category(), "stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::runtime_error(path + ": not a regular file");
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = uint64_t(st.st_size);
  mtime_ns_ = int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint only: a failure changes nothing
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t FileSource::size_now() const {
  struct stat st {};
  return ::fstat(fd_, &st) == 0 ? uint64_t(st.st_size) : size_;
}

size_t FileSource::read_at(uint64_t offset, char* buf, size_t n) {
  for (;;) {
    const ssize_t k = ::pread(fd_, buf, n, off_t(offset));
    if (k >= 0) return size_t(k);
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "read " + path_);
  }
}

}  // namespace paratune::tuning::scan
