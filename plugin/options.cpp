// The --paratune option and the plugstack.conf arguments.
#include <unistd.h>

#include <string>
#include <vector>

#include "contexts.h"
#include "plugin_state.h"

namespace paratune::plugin {

namespace {

// Slurm may call an option callback twice with the same value (pyxis notes this); only a different
// second value is an error.
int on_option(int, const char* optarg, int remote) {
  try {
    auto& s = state();
    const std::string value = optarg ? optarg : "";
    if (s.option_given && s.option_text != value) {
      log().error("--paratune given twice with different values ('{}', '{}')", s.option_text, value);
      return remote ? 0 : -1;
    }
    s.option_given = true;
    s.option_text = value;
    // Validate on the client so a bad SPEC never reaches the queue; remote re-parses in post_opt.
    if (!remote) s.spec = planner::parse_option_spec(value);
    return 0;
  } catch (const std::exception& e) {
    log().error("{}", e.what());
    return remote ? 0 : -1;  // sbatch/srun exit non-zero on a failing option callback
  } catch (...) {
    return remote ? 0 : -1;
  }
}

char kName[] = "paratune";
char kArgInfo[] = "SPEC";

}  // namespace

int register_option(spank_t sp) {
  static std::string usage = planner::option_usage();
  static spank_option option{kName, kArgInfo, usage.data(), 2 /* optional argument */, 0, on_option};
  spank_err_t rc = spank_option_register(sp, &option);
  if (rc != ESPANK_SUCCESS) log().error("could not register --paratune: {}", spank_strerror(rc));
  return 0;
}

// The node's short host name, for %h in plugstack paths (gethostname: the node's own, never the user's).
static std::string short_host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  std::string h = host;
  return h.substr(0, h.find('.'));
}

bool load_config(int ac, char** av) {
  auto& s = state();
  try {
    s.config = planner::parse_plugin_config(std::vector<std::string>(av, av + ac), short_host_name());
    s.config_ok = true;
  } catch (const std::exception& e) {
    log().error("plugstack.conf: {}; paratune is disabled", e.what());
    s.config_ok = false;
  }
  return s.config_ok;
}

}  // namespace paratune::plugin
