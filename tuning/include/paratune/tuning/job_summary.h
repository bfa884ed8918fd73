// The one-line summary of a logged job for where Slurm admins look: the slurmctld epilog
// (packaging/slurmctld-epilog-paratune.sh) writes it into the job's AdminComment, as Princeton's jobstats does with
// its own summary (`sacctmgr -i update job where jobid=ID set AdminComment=...` with slurmdbd).
//   "paratune: megatron tp=2 pp=1 dp=4 cp=1 mb=2 zero=1 rc=selective; predicted 1.234 s/step, achieved 1.402 s
//    (ratio 0.88); suspect: no"
// At most kMaxSummaryBytes, printable ASCII only (it goes through scontrol's argument and sacct's output).
#pragma once

#include <cstddef>
#include <string>

#include "paratune/advisor/plan.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

inline constexpr size_t kMaxSummaryBytes = 400;

// "tp=2 pp=1 dp=4 cp=1 mb=2 zero=1 rc=selective" (+ " vpp=N" when interleaved, " sp" with sequence parallelism).
std::string layout_summary(const advisor::Layout& l);

// The summary; `threshold` is the policy's suspect_ratio (the job is judged as `paratune log` judges it).
std::string job_summary(const LogEntry& e, double threshold);

}  // namespace paratune::tuning
