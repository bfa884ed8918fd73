// The scenario file (TOML) reader: the only file I/O in the advisor. Format: docs/model.md and paratune.toml(5).
// Errors are std::invalid_argument("FILE:LINE:COL: FIELD: what is valid").
// [cluster] topology = "..." is kept in Scenario::cluster.topology_file; the caller (CLI/plugin) resolves it with the
// probe and fills ClusterSpec (nics, gpu_nic_path, ...) before calling advise().
#pragma once

#include <string>
#include <string_view>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// Where the cluster comes from: the file's [cluster] table (the CLI), or the caller (the plugin, which fills it
// from the probed node and the allocation, then validates): then [cluster] may be absent and no validate() runs.
enum class ClusterSource { File, Caller };

Scenario load_scenario_toml(const std::string& path);
Scenario parse_scenario_toml(std::string_view text, const std::string& origin,
                             ClusterSource cluster = ClusterSource::File);

// A [parallel] table given as a comma-separated list, "tp=8,pp=2,recompute=selective" (`paratune explain --vs`):
// the file's keys, ranges and names. Throws std::invalid_argument "ORIGIN: 'ITEM': parallel.KEY: what is valid".
ParallelSpec parse_parallel_list(std::string_view list, const std::string& origin);

// Fill ClusterSpec defaults that depend on the GPU (nvlink_domain, nvls) when the file did not give them.
void apply_cluster_defaults(Scenario& s, bool nvlink_domain_given);

}  // namespace paratune::advisor
