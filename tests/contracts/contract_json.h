// The extracted contract of one framework version (tests/contracts/<name>.json, scripts/contracts/extract.py).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace paratune::contracts {

inline nlohmann::json contract(const std::string& name) {
  std::ifstream in(std::string(PARATUNE_SOURCE_DIR) + "/tests/contracts/" + name + ".json");
  EXPECT_TRUE(in.good()) << name;
  nlohmann::json j;
  in >> j;
  return j;
}

}  // namespace paratune::contracts
