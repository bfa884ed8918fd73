// The one place where the Slurm release series the plugin is built for makes a difference to its code.
// paratune builds from one source tree against Slurm 22.05 (Debian 12) and 24.11 (Debian 13); Slurm refuses a
// SPANK plugin built for another major.minor, so each series gets its own build (docs/operations.md, "Slurm versions").
// Everything that differs between the two series, measured with real daemons, and the test that shows each
// difference: docs/slurm-versions.md. Most differences need no code (paratune reads none of what changed); the
// ones the code meets are here, absorbed without #ifdef: by a type both series spell alike, and by compile-time
// checks that fail on a series where an assumption stops holding.
#pragma once

#include <cstdio>
#include <type_traits>

#include <slurm/slurm.h>

#include "spank_api.h"

namespace paratune::plugin::slurm_compat {

// libslurm's hostlist handle. 22.05: `typedef struct hostlist *hostlist_t;`, functions take `hostlist_t`.
// 24.11: `typedef struct hostlist hostlist_t;`, functions take `hostlist_t *`. Either way the handle is a
// `struct hostlist *`, which is what the code names.
using HostlistHandle = struct hostlist*;
static_assert(std::is_same_v<decltype(slurm_hostlist_create("")), HostlistHandle>,
              "slurm_hostlist_create no longer returns struct hostlist *: see docs/slurm-versions.md");

// Slurm's topology as text, the series-independent view (job/topology_text.h says why). 22.05:
// slurm_print_topo_info_msg(FILE *, msg, int one_liner), printing msg->topo_array; 24.11 added a node-list
// argument, (FILE *, msg, char *node_list, int one_liner), and prints through the topology plugin (tree: SwitchName=
// lines, block: BlockName= lines). The call is chosen by the declared signature, so neither needs an #ifdef.
template <typename Print = decltype(&slurm_print_topo_info_msg)>
void print_topology(FILE* out, topo_info_response_msg_t* msg, Print print = &slurm_print_topo_info_msg) {
  if constexpr (std::is_invocable_v<Print, FILE*, topo_info_response_msg_t*, char*, int>)
    print(out, msg, nullptr, 1);
  else
    print(out, msg, 1);
}

// The special step ids spank_api.h repeats (so that most files need not include slurm.h) are Slurm's own, on
// every series built for (the same values in 22.05 and 24.11).
static_assert(kBatchStep == SLURM_BATCH_SCRIPT && kExternStep == SLURM_EXTERN_CONT,
              "Slurm renumbered its special step ids: update spank_api.h");

}  // namespace paratune::plugin::slurm_compat
