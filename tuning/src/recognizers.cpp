#include "paratune/tuning/recognizers.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace paratune::tuning {

namespace {

// Drop ANSI escape sequences (torchtitan colours its metrics on a terminal) and carriage returns.
std::string clean(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\x1b') {
      if (i + 1 < in.size() && in[i + 1] == '[') {
        i += 2;
        while (i < in.size() && !(in[i] >= '@' && in[i] <= '~')) ++i;
      }
      continue;
    }
    if (c == '\r' || c == '\0') continue;
    out += c;
  }
  return out;
}

// The number right after `key` (skipping spaces, quotes, ':' and '='); thousands separators allowed when
// `commas`. nullopt when there is none or it is not finite.
std::optional<double> number_after(const std::string& s, std::string_view key, bool commas = false, size_t from = 0) {
  const size_t k = s.find(key, from);
  if (k == std::string::npos) return std::nullopt;
  size_t i = k + key.size();
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == ':' || s[i] == '=' || s[i] == '\'' || s[i] == '"')) ++i;
  std::string digits;
  while (i < s.size() && digits.size() < 40) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') digits += c;
    else if (!(commas && c == ',' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) break;
    ++i;
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> step_after(const std::string& s, std::string_view key) {
  const auto v = number_after(s, key);
  if (!v || *v < 0 || *v > 1e15) return std::nullopt;
  return static_cast<long long>(std::llround(*v));
}

bool has(const std::string& s, std::string_view w) { return s.find(w) != std::string::npos; }

bool positive(const std::optional<double>& v) { return v && *v > 0; }

std::optional<Figures> megatron(const std::string& s) {
  Figures f;
  const bool ms = has(s, "elapsed time per iteration (ms)");
  const bool sec = has(s, "elapsed time per iteration (s)");
  if (!ms && !sec && !has(s, "throughput per GPU (TFLOP/s/GPU)")) return std::nullopt;
  if (ms) {
    if (auto v = number_after(s, "elapsed time per iteration (ms)"); positive(v)) f.step_time_s = *v / 1000.0;
  } else if (sec) {
    if (auto v = number_after(s, "elapsed time per iteration (s)"); positive(v)) f.step_time_s = *v;
  }
  if (auto v = number_after(s, "throughput per GPU (TFLOP/s/GPU)"); positive(v)) f.tflops_per_gpu = v;
  // Megatron-DeepSpeed adds these two.
  if (auto v = number_after(s, "samples per second"); positive(v)) f.samples_per_s = v;
  if (auto v = number_after(s, "TFLOPs"); positive(v)) f.tflops_per_gpu = v;
  f.source = (f.samples_per_s || has(s, "TFLOPs:")) ? LogSource::DeepSpeed : LogSource::Megatron;
  const size_t it = s.find("iteration");
  if (it != std::string::npos) f.step = step_after(s, "iteration");
  // training.py's training_log prints the batch it ran (core_v0.15.3: "global batch size: %5d"), which the user's
  // own --global-batch-size after the plan's arguments may have changed.
  if (auto v = number_after(s, "global batch size:"); v && *v >= 1 && *v < 1e12) f.global_batch = (long long)*v;
  if (!f.step_time_s && !f.tflops_per_gpu && !f.samples_per_s) return std::nullopt;
  return f;
}

std::optional<Figures> deepspeed_engine(const std::string& s) {
  Figures f;
  f.source = LogSource::DeepSpeed;
  if (auto v = number_after(s, "CurrSamplesPerSec"); positive(v)) f.samples_per_s = v;
  else if (auto w = number_after(s, "SamplesPerSec"); positive(w)) f.samples_per_s = w;
  else if (auto x = number_after(s, "samples/sec"); positive(x)) f.samples_per_s = x;
  if (!f.samples_per_s) return std::nullopt;
  if (auto v = number_after(s, "TFLOPs"); positive(v)) f.tflops_per_gpu = v;
  // The pipeline engine's line (runtime/pipe/engine.py, v0.16.9): "steps: N loss: L iter time (s): T samples/sec:
  // S": its own step time and step number.
  if (auto v = number_after(s, "iter time (s):"); positive(v)) f.step_time_s = v;
  if (has(s, "global_step")) {
    f.step = step_after(s, "global_step");
  } else if (has(s, "steps:") && has(s, "iter time (s):")) {
    f.step = step_after(s, "steps:");
  } else if (const size_t k = s.find(", SamplesPerSec"); k != std::string::npos) {
    // "[timer.py:189:stop] 0/40, SamplesPerSec=..." : epoch/step
    size_t b = k;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(s[b - 1]))) --b;
    if (b < k) f.step = std::strtoll(s.substr(b, k - b).c_str(), nullptr, 10);
  }
  return f;
}

std::optional<Figures> torchtitan(const std::string& s) {
  if (!has(s, "tps:") || !(has(s, "tflops:") || has(s, "mfu:")) || !has(s, "step:")) return std::nullopt;
  Figures f;
  f.source = LogSource::Torchtitan;
  f.step = step_after(s, "step:");
  if (auto v = number_after(s, "tps:", true); positive(v)) f.tokens_per_s_per_gpu = v;
  // metrics.py prints "{tflops:,.2f}": 1,125.40 on a B200.
  if (auto v = number_after(s, "tflops:", true); positive(v)) f.tflops_per_gpu = v;
  if (auto v = number_after(s, "mfu:"); v && *v >= 0) f.mfu = *v / 100.0;
  if (!f.tokens_per_s_per_gpu) return std::nullopt;
  return f;
}

std::optional<Figures> nemo(const std::string& s) {
  if (!has(s, "train_step_timing")) return std::nullopt;
  Figures f;
  f.source = LogSource::Nemo;
  auto v = number_after(s, "train_step_timing in s");
  if (!v) v = number_after(s, "train_step_timing");
  if (!positive(v)) return std::nullopt;
  f.step_time_s = v;
  if (has(s, "global_step")) f.step = step_after(s, "global_step");
  return f;
}

std::optional<Figures> hf_trainer(const std::string& s) {
  if (!has(s, "train_samples_per_second")) return std::nullopt;
  Figures f;
  f.source = LogSource::HfTrainer;
  f.run_summary = true;
  if (auto v = number_after(s, "'train_samples_per_second'"); positive(v)) f.samples_per_s = v;
  else if (auto w = number_after(s, "train_samples_per_second"); positive(w)) f.samples_per_s = w;
  if (auto v = number_after(s, "train_steps_per_second"); positive(v)) f.steps_per_s = v;
  if (!f.samples_per_s && !f.steps_per_s) return std::nullopt;
  return f;
}

// "22.00 MiB", "23.65 GiB", "0 bytes" right after `key` (from `from`): GiB, or nullopt.
std::optional<double> size_after(const std::string& s, std::string_view key, size_t from = 0) {
  const size_t k = s.find(key, from);
  if (k == std::string::npos) return std::nullopt;
  const auto v = number_after(s, key, false, k);
  if (!v || *v < 0) return std::nullopt;
  size_t i = k + key.size();
  while (i < s.size() && (s[i] == ' ' || std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string unit = s.substr(i, 5);
  double scale = 0;
  if (unit.rfind("bytes", 0) == 0 || unit.rfind("B", 0) == 0) scale = 1.0 / (1024.0 * 1024 * 1024);
  else if (unit.rfind("KiB", 0) == 0) scale = 1.0 / (1024.0 * 1024);
  else if (unit.rfind("MiB", 0) == 0) scale = 1.0 / 1024;
  else if (unit.rfind("GiB", 0) == 0) scale = 1;
  else if (unit.rfind("TiB", 0) == 0) scale = 1024;
  if (scale == 0) return std::nullopt;
  const double gib = *v * scale;
  return std::isfinite(gib) && gib < 1048576 ? std::optional<double>(gib) : std::nullopt;
}

// PyTorch's caching allocator message (c10/cuda/CUDACachingAllocator.cpp), CUDA or HIP.
std::optional<OomFigures> torch_oom(const std::string& s, const char* device) {
  const std::string oom = std::string(device) + " out of memory. Tried to allocate";
  const std::string err = std::string(device) + " error: out of memory";
  if (!has(s, oom) && !has(s, err)) return std::nullopt;
  OomFigures f;
  f.kind = std::string(device) == "HIP" ? "hip" : "cuda";
  if (!has(s, oom)) return f;
  f.tried_gib = size_after(s, "Tried to allocate");
  if (has(s, "total capacity of")) f.capacity_gib = size_after(s, "total capacity of");
  else if (has(s, "total capacty of")) f.capacity_gib = size_after(s, "total capacty of");  // PyTorch 2.1's typo
  else if (const size_t k = s.find("(GPU "); k != std::string::npos) f.capacity_gib = size_after(s, ";", k);
  if (const size_t k = s.find(" of which "); k != std::string::npos) f.free_gib = size_after(s, " of which ", k);
  else if (const size_t a = s.find("already allocated;"); a != std::string::npos) f.free_gib = size_after(s, ";", a);
  return f;
}

// NCCL's (and RCCL's) own warnings when a device allocation fails (src/include/alloc.h, enqueue.cc).
std::optional<OomFigures> nccl_oom(const std::string& s) {
  if (!has(s, "NCCL WARN")) return std::nullopt;
  const bool failure = (has(s, "Cuda failure") || has(s, "Hip failure") || has(s, "HIP failure")) && has(s, "'out of memory'");
  const bool calloc = has(s, "Failed to CUDA calloc") || has(s, "Failed to CUDA malloc") || has(s, "Failed to HIP");
  if (!failure && !calloc) return std::nullopt;
  OomFigures f;
  f.kind = "nccl";
  if (calloc) {
    auto bytes = number_after(s, "calloc");
    if (!bytes) bytes = number_after(s, "malloc");
    if (bytes && *bytes > 0 && *bytes / (1024.0 * 1024 * 1024) < 1048576) f.tried_gib = *bytes / (1024.0 * 1024 * 1024);
  }
  return f;
}

}  // namespace

std::optional<OomFigures> recognise_oom(std::string_view raw) {
  if (raw.size() > 65536) return std::nullopt;
  const std::string s = clean(raw);
  if (auto f = torch_oom(s, "CUDA")) return f;
  if (auto f = torch_oom(s, "HIP")) return f;
  return nccl_oom(s);
}

std::optional<double> recognise_peak_memory_gib(std::string_view raw) {
  if (raw.size() > 65536) return std::nullopt;
  const std::string s = clean(raw);
  auto in_range = [](std::optional<double> v, double scale) -> std::optional<double> {
    if (!v || !(*v > 0)) return std::nullopt;
    const double g = *v * scale;
    return g < 1048576 ? std::optional<double>(g) : std::nullopt;
  };
  if (has(s, "memory (MB)")) {  // Megatron's report_memory: MB there are bytes / 2^20
    if (auto v = in_range(number_after(s, "max reserved:"), 1.0 / 1024)) return v;
    return in_range(number_after(s, "max allocated:"), 1.0 / 1024);
  }
  if (has(s, "step:") && has(s, "memory:") && has(s, "GiB(")) return in_range(number_after(s, "memory:"), 1);
  if (has(s, "MaxMemAllocated=")) return in_range(number_after(s, "MaxMemAllocated="), 1);   // DeepSpeed, GB = 2^30
  if (has(s, "Max_MA")) return in_range(number_after(s, "Max_MA"), 1);
  return std::nullopt;
}

nlohmann::json oom_report_line(const OomFigures& f, std::string_view line) {
  nlohmann::json j = {{"event", "oom"}, {"kind", f.kind}};
  if (f.tried_gib) j["tried_gib"] = *f.tried_gib;
  if (f.capacity_gib) j["capacity_gib"] = *f.capacity_gib;
  if (f.free_gib) j["free_gib"] = *f.free_gib;
  j["message"] = clean(line.substr(0, 300));
  return j;
}

nlohmann::json memory_report_line(double peak_gib) { return {{"event", "memory"}, {"peak_gib", peak_gib}}; }

const char* to_string(LogSource s) {
  switch (s) {
    case LogSource::Megatron: return "megatron";
    case LogSource::DeepSpeed: return "deepspeed";
    case LogSource::Torchtitan: return "torchtitan";
    case LogSource::Nemo: return "nemo";
    case LogSource::HfTrainer: return "hf-trainer";
  }
  return "?";
}

std::optional<Figures> recognise_line(std::string_view raw) {
  if (raw.size() > 65536) return std::nullopt;  // no framework writes such lines; do not scan them
  const std::string s = clean(raw);
  if (auto f = nemo(s)) return f;
  if (auto f = megatron(s)) return f;
  if (auto f = torchtitan(s)) return f;
  if (auto f = hf_trainer(s)) return f;
  if (auto f = deepspeed_engine(s)) return f;
  return std::nullopt;
}

std::optional<double> step_time(const Figures& f, const StepContext& c) {
  if (f.step_time_s && *f.step_time_s > 0) return f.step_time_s;
  if (f.steps_per_s && *f.steps_per_s > 0) return 1.0 / *f.steps_per_s;
  if (f.samples_per_s && *f.samples_per_s > 0 && c.global_batch > 0) return double(c.global_batch) / *f.samples_per_s;
  if (f.tokens_per_s_per_gpu && *f.tokens_per_s_per_gpu > 0 && c.global_batch > 0 && c.seq_len > 0 && c.world_size > 0)
    return double(c.global_batch) * double(c.seq_len) / (*f.tokens_per_s_per_gpu * double(c.world_size));
  return std::nullopt;
}

std::vector<MissingContext> missing_context(const Figures& f, const StepContext& c) {
  if (step_time(f, c)) return {};
  static constexpr MissingContext kBatch{"global batch", "--global-batch N (or $PARATUNE_GLOBAL_BATCH)"};
  static constexpr MissingContext kSeq{"sequence length", "--seq-len N (or the plan file $PARATUNE_PLAN)"};
  static constexpr MissingContext kWorld{"world size", "--world-size N (or $PARATUNE_TP, _PP, _DP, _CP)"};
  std::vector<MissingContext> out;
  if (f.samples_per_s && *f.samples_per_s > 0) {  // global samples/s: the batch turns it into a step time
    if (c.global_batch <= 0) out.push_back(kBatch);
  } else if (f.tokens_per_s_per_gpu && *f.tokens_per_s_per_gpu > 0) {  // per-GPU tokens/s: all three
    if (c.global_batch <= 0) out.push_back(kBatch);
    if (c.seq_len <= 0) out.push_back(kSeq);
    if (c.world_size <= 0) out.push_back(kWorld);
  }
  return out;
}

std::optional<nlohmann::json> report_line(const Figures& f, const StepContext& c) {
  const auto t = step_time(f, c);
  if (!t || !std::isfinite(*t) || *t <= 0) return std::nullopt;
  nlohmann::json j;
  if (f.step) j["step"] = *f.step;
  j["step_time_s"] = *t;
  const long long batch = f.global_batch ? *f.global_batch : c.global_batch;  // what ran, else the plan's
  if (batch > 0 && c.seq_len > 0) j["tokens"] = double(batch) * double(c.seq_len);
  j["source"] = to_string(f.source);
  if (f.tflops_per_gpu) j["tflops_per_gpu"] = *f.tflops_per_gpu;
  if (f.mfu) j["mfu"] = *f.mfu;
  if (f.run_summary) j["run_average"] = true;
  return j;
}

}  // namespace paratune::tuning
