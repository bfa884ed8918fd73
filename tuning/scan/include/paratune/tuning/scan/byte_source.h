// Where the streaming readers get a log's bytes: a file read with pread (never loaded whole), or a string (tests,
// benchmarks). Offsets are stable: the two passes of the merge (log_stream.h) and the per-job index (job_index.h)
// name a line by its source and byte offset.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace paratune::tuning::scan {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual const std::string& name() const = 0;
  // Up to n bytes at `offset` into buf: the count read, 0 at the end. Throws std::runtime_error naming the source.
  virtual size_t read_at(uint64_t offset, char* buf, size_t n) = 0;
};

class StringSource : public ByteSource {
 public:
  StringSource(std::string name, std::string content) : name_(std::move(name)), content_(std::move(content)) {}
  const std::string& name() const override { return name_; }
  size_t read_at(uint64_t offset, char* buf, size_t n) override;

 private:
  std::string name_, content_;
};

// A regular file opened without following a symlink (std::runtime_error / std::system_error naming it otherwise).
class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  const std::string& name() const override { return path_; }
  size_t read_at(uint64_t offset, char* buf, size_t n) override;
  dev_t device() const { return dev_; }
  ino_t inode() const { return ino_; }
  uint64_t size_at_open() const { return size_; }
  int64_t mtime_ns_at_open() const { return mtime_ns_; }  // last modification, nanoseconds since the epoch
  uint64_t size_now() const;  // the size now (it grows while a writer appends); size_at_open() on an error

 private:
  std::string path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t size_ = 0;
  int64_t mtime_ns_ = 0;
};

}  // namespace paratune::tuning::scan
