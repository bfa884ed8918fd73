// Throughput figures in training frameworks' own log lines (what `paratune run` scans the child's output for):
//   Megatron-LM     "iteration N/ M | ... | elapsed time per iteration (ms): X | throughput per GPU (TFLOP/s/GPU): Y"
//   DeepSpeed       Megatron-DeepSpeed "... elapsed time per iteration (s): X | ... | samples per second: S |
//                   TFLOPs: Y |", the engine's "SamplesPerSec=S" / "CurrSamplesPerSec=S", "samples/sec"
//   torchtitan      "step: N  loss: ...  tps: 7,282  tflops: 0.52  mfu: 0.17%"
//   NeMo/Lightning  "train_step_timing in s=3.590" (progress bar) / "train_step_timing in s: 0.0315" (NeMo 2)
//   HF Trainer      "{'train_runtime': ..., 'train_samples_per_second': S, 'train_steps_per_second': R, ...}"
// tests/fixtures/logs/ holds real lines of each, with their sources.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace paratune::tuning {

enum class LogSource { Megatron, DeepSpeed, Torchtitan, Nemo, HfTrainer };
const char* to_string(LogSource s);

struct Figures {
  LogSource source = LogSource::Megatron;
  std::optional<long long> step;
  std::optional<double> step_time_s;           // as logged (Megatron ms converted)
  std::optional<double> tflops_per_gpu;
  std::optional<double> samples_per_s;         // global (DeepSpeed, HF Trainer)
  std::optional<double> tokens_per_s_per_gpu;  // torchtitan "tps"
  std::optional<double> mfu;                   // fraction (torchtitan prints percent)
  std::optional<double> steps_per_s;           // HF Trainer
  std::optional<long long> global_batch;       // sequences per step as the framework printed them (Megatron's
                                               // "global batch size:"): what it ran, which may not be the plan's
  bool run_summary = false;                    // a whole-run average (HF Trainer's final metrics)
};

// The figures a line carries, or nullopt when it is not a throughput line of a known framework. ANSI colour codes
// and a leading "[rankN]:"-style prefix are tolerated; no line can make it throw.
std::optional<Figures> recognise_line(std::string_view line);

// What turns throughput into a step time when the line has none (from the job's PARATUNE_* environment and plan).
struct StepContext {
  long long global_batch = 0;   // sequences per step (PARATUNE_GLOBAL_BATCH)
  long long seq_len = 0;        // tokens per sequence (plan file's scenario)
  long long world_size = 0;     // GPUs (PARATUNE_TP*PP*DP*CP)
};

// Seconds per step from what the line says plus the context; nullopt when it cannot be known.
std::optional<double> step_time(const Figures& f, const StepContext& ctx);

// The report line (`$PARATUNE_REPORT` format) for a recognised line; nullopt without a step time.
std::optional<nlohmann::json> report_line(const Figures& f, const StepContext& ctx);

// What a recognised line without a step time (step_time() nullopt) lacks in the context, so that `paratune run`
// can say which line it could not use and what to pass: one entry per missing quantity, in the order global
// batch, sequence length, world size. Empty when the line gives a step time (or cannot give one whatever the
// context: no throughput figure at all).
struct MissingContext {
  const char* what;    // "global batch", "sequence length", "world size"
  const char* remedy;  // "--global-batch N (or $PARATUNE_GLOBAL_BATCH)", ...
};
std::vector<MissingContext> missing_context(const Figures& f, const StepContext& ctx);

// Out-of-memory deaths in a framework's output (tests/fixtures/logs/oom.log holds real ones with their sources):
//   PyTorch  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity
//            of 23.65 GiB of which 11.06 MiB is free. ..." (2.x; "capacty" in 2.1), "RuntimeError: CUDA out of
//            memory. Tried to allocate 128.00 MiB (GPU 0; 11.17 GiB total capacity; ...; 24.81 MiB free; ...)"
//            (1.x), and the same with "HIP out of memory" on ROCm
//   NCCL     "NCCL WARN Cuda failure 'out of memory'", "NCCL WARN Failed to CUDA calloc 6291456 bytes",
//            "ncclSystemError ... Cuda failure 'out of memory'" (and "Hip failure" / "Failed to HIP ..." on RCCL)
// A line that only talks about memory ("I sometimes get CUDA OOM") is not one: each form is anchored on the
// message the library itself prints.
struct OomFigures {
  std::string kind;                          // "cuda", "hip", "nccl"
  std::optional<double> tried_gib, capacity_gib, free_gib;
};
std::optional<OomFigures> recognise_oom(std::string_view line);

// The peak memory per GPU a line reports, in GiB: Megatron's "memory (MB) | ... | max reserved: X" (else
// "max allocated"), torchtitan's "memory: 9.46GiB(64.99%)" (its max reserved), DeepSpeed's
// "MaxMemAllocated=9.02GB" / see_memory_usage "Max_MA 1.2 GB" (allocated: a lower bound).
std::optional<double> recognise_peak_memory_gib(std::string_view line);

// The report lines for them: {"event": "oom", "kind": ..., "tried_gib": ..., "capacity_gib": ..., "free_gib": ...,
// "message": the line, capped at 300 bytes} and {"event": "memory", "peak_gib": X}.
nlohmann::json oom_report_line(const OomFigures& f, std::string_view line);
nlohmann::json memory_report_line(double peak_gib);

}  // namespace paratune::tuning
