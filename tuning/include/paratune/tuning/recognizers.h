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

}  // namespace paratune::tuning
