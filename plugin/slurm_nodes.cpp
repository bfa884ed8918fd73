#include "slurm_nodes.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "slurm_compat.h"

namespace paratune::plugin {

namespace {

struct HostlistDeleter {
  void operator()(slurm_compat::HostlistHandle hl) const { slurm_hostlist_destroy(hl); }
};
using Hostlist = std::unique_ptr<struct hostlist, HostlistDeleter>;

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// The longest run of name characters outside a bracketed range. DNS names stop at 253 bytes; libslurm refuses
// a longer prefix itself but leaks the copy it made on that path (LeakSanitizer, Slurm 22.05), so such a list
// is turned away before Slurm sees it.
size_t longest_name_run(const std::string& compact) {
  size_t longest = 0, run = 0;
  int depth = 0;
  for (char c : compact) {
    if (c == '[') ++depth;
    if (depth == 0 && c != ',' && c != ']') {
      longest = std::max(longest, ++run);
    } else if (depth == 0 || c == '[') {
      run = 0;
    }
    if (c == ']' && depth > 0) --depth;
  }
  return longest;
}

StepNodes withheld(std::string why) {
  StepNodes out;
  out.problem = std::move(why);
  return out;
}

}  // namespace

const char* node_list_variable(bool batch_step) { return batch_step ? "SLURM_JOB_NODELIST" : "SLURM_STEP_NODELIST"; }

StepNodes expand_node_list(const std::string& compact, int max_hosts) {
  if (compact.empty()) return withheld("no node list");
  if (compact.size() > kMaxNodeListBytes)
    return withheld("node list of " + std::to_string(compact.size()) + " bytes (limit " +
                    std::to_string(kMaxNodeListBytes) + ")");
  if (const size_t run = longest_name_run(compact); run > kMaxHostNameBytes)
    return withheld("a host name of " + std::to_string(run) + " bytes (limit " + std::to_string(kMaxHostNameBytes) +
                    ")");
  Hostlist hl(slurm_hostlist_create(compact.c_str()));
  if (!hl) return withheld("Slurm could not parse the node list");
  // Counting does not expand: a range such as prefix[0-99999] is one entry until shifted out.
  const int count = slurm_hostlist_count(hl.get());
  if (count < 1 || count > max_hosts)
    return withheld("node list names " + std::to_string(count) + " hosts for a step of " + std::to_string(max_hosts) +
                    " nodes");
  StepNodes out;
  size_t bytes = 0;
  while (true) {
    std::unique_ptr<char, FreeDeleter> host(slurm_hostlist_shift(hl.get()));
    if (!host) break;
    out.names.emplace_back(host.get());
    bytes += out.names.back().size() + 1;
    if (bytes > kMaxNodeListBytes) return withheld("expanded node list over " + std::to_string(kMaxNodeListBytes) + " bytes");
  }
  out.compact = compact;
  return out;
}

StepNodes step_nodes(const planner::JobEnvironment& env, bool batch_step, int node_count) {
  const auto value = env.get(node_list_variable(batch_step));
  if (!value) return withheld(std::string(node_list_variable(batch_step)) + " is not set");
  return expand_node_list(*value, node_count);
}

}  // namespace paratune::plugin
