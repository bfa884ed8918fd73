// Pipeline-schedule rules (pipeline_schedule.h). Sources: torch.distributed.pipelining (schedules.py:
// get_schedule_class; PipelineScheduleSingle runs one stage per rank, PipelineScheduleMulti two or more,
// ScheduleZBVZeroBubble "requires exactly two stages per rank"), torchtitan's pipeline_parallel.py at the pinned
// v0.2.2 and main (the same rules: "Single stage schedule requires exactly 1 stage per rank", "Multi-stage schedule
// requires at least 2 stages per rank"), Megatron-Core's schedules.py (1F1B and interleaved only).
#include "pipeline_schedule.h"

#include "paratune/advisor/framework_traits.h"

namespace paratune::advisor {

const char* torchtitan_schedule_name(PipelineSchedule p) {
  switch (p) {
    case PipelineSchedule::OneFOneB: return "1F1B";
    case PipelineSchedule::Interleaved: return "Interleaved1F1B";
    case PipelineSchedule::GPipe: return "GPipe";
    case PipelineSchedule::ZeroBubble: return "InterleavedZeroBubble";
    case PipelineSchedule::Zbv: return "ZBVZeroBubble";
  }
  return "?";
}

namespace {

std::string what_runs(Framework f) {
  if (f == Framework::Megatron || f == Framework::Nemo)
    return "Megatron-Core's schedules.py at every pinned version runs 1f1b and interleaved only";
  if (f == Framework::DeepSpeed) return "its pipeline engine runs its own 1F1B-like schedule only";
  if (f == Framework::Automodel) return "distributed.pipeline.pp_schedule takes the schedules paratune prices";
  return "it has no pipeline parallelism";
}

}  // namespace

int default_virtual_stages(PipelineSchedule p) { return multi_chunk(p) ? 2 : 1; }

bool schedule_takes(PipelineSchedule p, int v) {
  if (p == PipelineSchedule::Zbv) return v == 2;
  return multi_chunk(p) ? v >= 2 : v == 1;
}

std::string schedule_problem(const Layout& l, Framework f) {
  if (!l.schedule) return "";
  const PipelineSchedule p = *l.schedule;
  const std::string name = std::string("pipeline_schedule ") + to_string(p);
  if (l.pp < 2 && p == PipelineSchedule::OneFOneB) return "";  // no pipeline: nothing to schedule
  if (!runs_schedule(f, p))
    return name + " is not run by " + to_string(f) + " (" + what_runs(f) + "); torchtitan v0.2 and main run it (" +
           torchtitan_schedule_name(p) + ")";
  if (l.pp < 2) return name + " needs pp >= 2";
  if (p == PipelineSchedule::Zbv && (l.first_stage_layers > 0 || l.last_stage_layers > 0))
    return name + " places the stages in a V (rank 0 holds the first and the last): first/last_stage_layers are not "
                  "planned for it";
  const int v = l.virtual_stages;
  if (p == PipelineSchedule::Zbv && v != 2)
    return name + " (ZBVZeroBubble) runs exactly 2 chunks per rank in a V: virtual_stages must be 2, not " +
           std::to_string(v);
  if (multi_chunk(p) && v < 2)
    return name + " runs several chunks per rank: virtual_stages must be >= 2 (unset: 2)";
  if (!multi_chunk(p) && v != 1)
    return name + " runs one stage per rank: virtual_stages must be 1 (" + std::to_string(v) +
           " chunks per rank: interleaved or zero_bubble)";
  return "";
}

}  // namespace paratune::advisor
