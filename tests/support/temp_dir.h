// A scratch directory for one test, removed with everything in it afterwards. Mode 0755 so that a child that
// dropped to another user (the report reader) can still traverse it.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace paratune::fixtures {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/paratune-test-XXXXXX";
    path = ::mkdtemp(tmpl);
    ::chmod(path.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace paratune::fixtures
