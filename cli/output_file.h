// A file a command writes for the user or the admin (calibrate's -o, measure's profile, log --svg): whole or not at
// all. The plugin reads a calibration or profile at every job start, so a half-written one (a full disk, a killed
// command) would silently leave every job on the shipped model.
#pragma once

#include <string>

namespace paratune::cli {

// Writes `content` to `path` through a temporary file in the same directory, fsync'ed and renamed over it; a symlink
// is written through (its target is replaced), an existing file keeps its permission bits (else 0644 less the
// umask). Throws std::runtime_error saying why (the path not included: the caller names it): the target is not a
// regular file (a directory, /dev/full), its directory cannot be written, the disk is full.
void write_output_file(const std::string& path, const std::string& content);

}  // namespace paratune::cli
