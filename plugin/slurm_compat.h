// The one place where the Slurm release series the plugin is built for makes a difference to its code.
// paratune builds from one source tree against Slurm 22.05 (Debian 12) and 24.11 (Debian 13); Slurm refuses a
// SPANK plugin built for another major.minor, so each series gets its own build (README, "Slurm versions").
// What differs between the two series, measured with real daemons, and the test that shows each difference:
// docs/slurm-versions.md. Only what touches this code is here; no #ifdef: the API difference is absorbed by a
// type both series spell alike, and the series itself is a constant that code and tests can compare.
#pragma once

#include <type_traits>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

#include "spank_api.h"

namespace paratune::plugin::slurm_compat {

// The series (major.minor) of the headers this build uses: the loader's own check (plugin.c compares
// plugin_version & 0xffff00 with its SLURM_VERSION_NUMBER), so it is the series the plugin can load into.
inline constexpr unsigned kSeriesMajor = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
inline constexpr unsigned kSeriesMinor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);

// libslurm's hostlist handle. 22.05: `typedef struct hostlist *hostlist_t;`, functions take `hostlist_t`.
// 24.11: `typedef struct hostlist hostlist_t;`, functions take `hostlist_t *`. Either way the handle is a
// `struct hostlist *`, which is what the code names; the assertion fails to compile on a series where that
// stops being true.
using HostlistHandle = struct hostlist*;
static_assert(std::is_same_v<decltype(slurm_hostlist_create("")), HostlistHandle>,
              "slurm_hostlist_create no longer returns struct hostlist *: see docs/slurm-versions.md");

}  // namespace paratune::plugin::slurm_compat
