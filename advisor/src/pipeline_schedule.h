// Whether a layout's pipeline schedule (Layout::schedule) can run: its chunks per rank, the pipeline degree, the
// framework, and what torch.distributed.pipelining refuses.
#pragma once

#include <string>

#include "paratune/advisor/plan.h"

namespace paratune::advisor {

// "" when the schedule runs, else why not (naming the framework that runs it where another does).
std::string schedule_problem(const Layout& l, Framework f);
// torch.distributed.pipelining's name for the schedule (torchtitan's parallelism.pipeline_parallel_schedule).
const char* torchtitan_schedule_name(PipelineSchedule p);
// The model chunks per rank a schedule takes when the scenario leaves virtual_stages unset: 2 for the
// multi-chunk schedules (torchtitan's own default for them: pipeline_parallel.py, "For multi-stage schedules,
// default is 2 virtual stages per rank"), else 1.
int default_virtual_stages(PipelineSchedule p);
// Whether the search may try v chunks per rank under the schedule a scenario fixed.
bool schedule_takes(PipelineSchedule p, int v);

}  // namespace paratune::advisor
