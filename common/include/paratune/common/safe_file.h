// File operations that stay safe when the path is hostile: RAII descriptors, no symlink following,
// atomic replacement, bounded reads, single-write appends. Every function reports errors by exception
// (std::system_error / std::runtime_error) naming the path.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace paratune::common {

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Write all of `data` (retrying short writes and EINTR); std::system_error naming `what` on failure.
void write_all(int fd, const std::string& data, const std::string& what);

// mkdir (mode) unless it exists; an existing entry must be a real directory (not a symlink) owned by `owner`.
// Root-side (owner 0): a directory it creates gets exactly `mode` (fchmod on the descriptor, whatever the umask),
// and one that is group- or world-writable is refused (sticky bit or not), since a user could plant entries in it.
// Returns an O_DIRECTORY descriptor opened without following symlinks.
UniqueFd ensure_directory(const std::string& path, mode_t mode, uid_t owner);

// Write `content` to dirfd/name atomically (temporary file + rename), never following a symlink. With
// `exact_mode` the file gets exactly `mode` (fchmod on the descriptor, whatever the umask): root-side files that
// another daemon must read (the metrics textfile, 0644, for node_exporter).
void write_file_atomic(int dirfd, const std::string& name, const std::string& content, mode_t mode,
                       bool exact_mode = false);

// An exclusive flock on dirfd/lock_name (created 0600, a regular file with one link, root's when running as
// root), tried `attempts` times 10 ms apart: the locked descriptor (unlocked when closed), or an empty one when
// another process held it throughout. Throws when the lock file itself is wrong.
UniqueFd lock_in_directory(int dirfd, const std::string& lock_name, int attempts);

// Read dirfd/name (at most `limit` bytes; larger is an error) when it is a regular file with one link owned by
// this process's user; `missing` (and "") when it does not exist.
std::string read_owned_file_at(int dirfd, const std::string& name, size_t limit, bool* missing);

// Append one line to dirfd/name with a single write() under an flock (bounded wait); creates it with `mode`, and
// sets `mode` (and `group`, when >= 0) on the descriptor it opened — never by name, which could be swapped.
// Refuses, writing and changing nothing, a file with more than one link (a planted hard link) and, when running
// as root, a file not owned by root. Returns "" when the line was written under the lock, else why it was written
// without it (the lock not had within 2 s, or refused by the file system).
std::string append_line(int dirfd, const std::string& name, const std::string& line, mode_t mode,
                        long group = -1);

// Read at most `limit` bytes of a regular file, not following symlinks; `truncated` says if there was more.
std::string read_bounded(const std::string& path, size_t limit, bool* truncated = nullptr);

// A file named on a command line (scenario, calibration, profile): symlinks followed, but only a regular file is
// read (a directory would parse as empty, a FIFO would block) and at most `limit` bytes (more is an error, never cut
// short). std::runtime_error says why, without the path (the caller names it).
std::string read_input_file(const std::string& path, size_t limit);

// An admin's file read as root (calibration): it must be a regular file (not a symlink, FIFO or directory), owned
// by `owner` and not writable by group or others, and at most `limit` bytes (a larger one is refused, never cut
// short), else std::runtime_error says why (a user-writable input would let users steer every job's decision).
std::string read_trusted_file(const std::string& path, size_t limit, uid_t owner = 0);

}  // namespace paratune::common
