// Shared helpers for the probe tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

#include "paratune/probe/probe.h"

namespace probe_test {

inline std::string fixture(const std::string& rel) { return std::string(PARATUNE_FIXTURES_DIR) + "/" + rel; }
inline std::string shared_fixture(const std::string& rel) {
  return std::string(PARATUNE_SHARED_DIR) + "/fixtures/topologies/" + rel;
}
inline bool exists(const std::string& p) { return ::access(p.c_str(), R_OK) == 0; }

inline paratune::probe::Topology load(const std::string& path, std::vector<int> alloc = {}) {
  paratune::probe::ProbeOptions o;
  o.topology_file = path;
  o.allocated_gpus = std::move(alloc);
  return paratune::probe::probe(o);
}

inline paratune::probe::Topology load_fixture(const std::string& rel, std::vector<int> alloc = {}) {
  return load(fixture(rel), std::move(alloc));
}

inline bool contains_prefix(const std::vector<std::string>& v, const std::string& prefix) {
  for (const auto& s : v)
    if (s.rfind(prefix, 0) == 0) return true;
  return false;
}

// A fresh temporary directory, removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/paratune-probe-test-XXXXXX";
    const char* p = ::mkdtemp(t);
    path = p ? p : "/tmp";
  }
  ~TempDir() {
    if (path.rfind("/tmp/paratune-probe-test-", 0) == 0) {
      std::string cmd = "rm -rf '" + path + "'";
      if (std::system(cmd.c_str()) != 0) {
      }
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace probe_test
