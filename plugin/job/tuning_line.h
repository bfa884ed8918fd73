// The parts of a job's tuning-log line that come after the decision, made from typed values (no Slurm, no I/O):
// what the job's report said, what the other nodes' checks found, and what the finished line adds to the node's
// metrics. The plugin (remote_exit.cpp) gathers the inputs in slurmstepd; everything here is unit-tested.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics_file.h"

namespace paratune::job {

// The report reader's fields (report_reader.h: report, achieved, ratio, suspect, oom) into the line. A suspect
// run names the nodes it ran on (`nodes`: Slurm's list, or this host when Slurm gave none); an out-of-memory death
// carries the memory the plan predicted, so that calibrate learns head-room from both.
void add_report_fields(nlohmann::json& line, nlohmann::json fields, const std::vector<std::string>& nodes);

// The other nodes' checks (node_checks.h collect_node_checks) into the line, with one note per node whose
// topology fingerprint differs from the plan's.
void add_node_checks(nlohmann::json& line, nlohmann::json checks);

// What the line adds to this node's metrics (job-level events: node 0, once per job).
void line_events(const nlohmann::json& line, MetricsEvents& ev);

}  // namespace paratune::job
