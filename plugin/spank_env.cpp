#include "spank_env.h"

#include <vector>

namespace paratune::plugin {

std::optional<std::string> SpankEnvironment::get(const std::string& name) const {
  // Grow the buffer on truncation, up to a bound: a hostile 100 MB variable must not cost us.
  for (int size = 4096; size <= (1 << 20); size *= 4) {
    std::vector<char> buf(size);
    spank_err_t rc = spank_getenv(sp_, name.c_str(), buf.data(), size);
    if (rc == ESPANK_SUCCESS) return std::string(buf.data());
    if (rc != ESPANK_NOSPACE) return std::nullopt;
  }
  return std::nullopt;
}

bool SpankEnvironment::set(const std::string& name, const std::string& value) {
  return spank_setenv(sp_, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS;
}

bool SpankEnvironment::unset(const std::string& name) {
  return spank_unsetenv(sp_, name.c_str()) == ESPANK_SUCCESS;
}

}  // namespace paratune::plugin
