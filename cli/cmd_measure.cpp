// `paratune measure -o FILE [--python PATH] [--budget S]`: a hardware profile of this node type, measured with the
// site's own PyTorch under srun (docs/measure.md). Every task runs the benchmark script (measure.py, shipped in
// /usr/share/paratune) as its rank; rank 0 fits the figures to the model's terms and writes the profile, keyed by the
// node's topology fingerprint.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "command.h"
#include "measure_raw.h"
#include "options.h"
#include "output_file.h"
#include "paratune/advisor/catalog.h"
#include "paratune/probe/probe.h"

#ifndef PARATUNE_DATADIR
#define PARATUNE_DATADIR "/usr/share"
#endif

namespace paratune::cli {
namespace {

namespace fs = std::filesystem;

const char* kDescription =
    "Measure this node type's GEMMs (per precision the device has), attention, memory copy and collectives\n"
    "(all-reduce, all-gather, reduce-scatter, all-to-all, send/recv; NCCL on GPUs, gloo on CPUs) with the site's\n"
    "PyTorch, and write a hardware profile (TOML, paratune.toml(5)) keyed by the node's topology fingerprint that\n"
    "`predict`/`advise --profile` use in place of the catalog's figures. Run it under srun, one task per GPU, on\n"
    "two or more nodes of one type (the packaged /usr/share/paratune/paratune-measure.sbatch does); every task\n"
    "runs the benchmark as its rank, rank 0 writes the profile. Bounded by --budget (progress on stderr).";
const char* kFooter =
    "exit status: 0 written, 1 the benchmark failed, timed out or the file cannot be written, 2 bad option";

struct MeasureArgs {
  std::string out, python = "/usr/bin/python3", script, topology, device = "auto", raw;
  double budget = 480;
  int port = 0;
  bool quick = false;
};

// The node's topology: the file given ("%h" = this host's short name, as in the plugin's topology=), else the live
// probe with the plugin's own sources (ibverbs and NVML included), so that the fingerprint is the one the plugin
// computes on this node.
probe::Topology node_topology(const std::string& spec) {
  probe::ProbeOptions po;
  if (!spec.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string short_host = std::string(host).substr(0, std::string(host).find('.'));
    std::string path = spec;
    for (size_t at; (at = path.find("%h")) != std::string::npos;) path.replace(at, 2, short_host);
    po.topology_file = path;
    po.use_nvml = false;
  }
  return probe::probe(po);
}

std::string gpu_key_of(const probe::Topology& t) {
  for (const auto& g : t.gpus)
    if (advisor::is_gpu_key(g.model)) return advisor::gpu_spec(g.model).key;
  return t.gpus.empty() ? "" : t.gpus.front().model;
}

// Runs argv with the rank's environment; SIGTERM then SIGKILL after `limit` seconds. The exit status (124 timed out).
int run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env, double limit) {
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "paratune measure: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  bool termed = false;
  for (int status = 0;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return termed ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return 127;
    const auto now = std::chrono::steady_clock::now();
    if (!termed && now > deadline) {
      std::fprintf(stderr, "paratune measure: the benchmark ran past %.0f s: stopped\n", limit);
      ::kill(pid, SIGTERM);
      termed = true;
    } else if (termed && now > deadline + std::chrono::seconds(10)) {
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// When the benchmark is stopped: its phases stop themselves at the budget (each finishes the size it is timing);
// the rest is for importing PyTorch and the rendezvous, and for a size that overran.
double hard_limit(double budget) { return budget + std::max(20.0, budget / 4); }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int write_profile(const MeasureArgs& a, const std::string& raw_path, const probe::Topology& topo) {
  std::vector<std::string> warnings;
  advisor::HardwareProfile p;
  try {
    p = measure::profile_from_raw(slurp(raw_path), topo.fingerprint, gpu_key_of(topo), &warnings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune measure: %s: %s\n", raw_path.c_str(), e.what());
    return kFailure;
  }
  for (const auto& w : warnings) std::fprintf(stderr, "paratune measure: %s\n", w.c_str());
  try {
    write_output_file(a.out, advisor::to_toml(p));  // whole or not at all
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune measure: cannot write %s: %s\n", a.out.c_str(), e.what());
    return kFailure;
  }
  std::printf("paratune measure: %s (%s, fingerprint %s, %d nodes x %d ranks, %.0f s): GEMM bf16 %.4g TFLOP/s, "
              "copy %.4g GB/s, intra-node bus %.4g GB/s, inter-node bus %.4g GB/s\n",
              a.out.c_str(), p.gpu.c_str(), p.fingerprint.c_str(), p.nodes, p.ranks_per_node, p.duration_s,
              p.rates.bf16_gemm_tflops, p.rates.hbm_gbps, p.rates.intra_busbw_gbps, p.rates.inter_busbw_gbps);
  return kOk;
}

// A directory only this user can enter, under $TMPDIR or /tmp, removed with what it holds when it goes.
struct PrivateDir {
  std::string path;
  PrivateDir() = default;
  PrivateDir(PrivateDir&& o) noexcept : path(std::exchange(o.path, {})) {}
  PrivateDir& operator=(PrivateDir&& o) noexcept {
    std::swap(path, o.path);
    return *this;
  }
  ~PrivateDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  static PrivateDir make(const std::string& prefix) {
    std::string templ = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr)
      throw std::runtime_error("cannot create a private directory " + templ + " (" + std::strerror(errno) + ")");
    PrivateDir d;
    d.path = templ;
    return d;
  }
};

int run(const MeasureArgs& a) {
  probe::Topology topo;
  try {
    topo = node_topology(a.topology);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune measure: topology: %s\n", e.what());
    return kFailure;
  }
  const measure::Task t = measure::task_from_env(a.port);
  const std::string script = a.script.empty() ? std::string(PARATUNE_DATADIR) + "/paratune/measure.py" : a.script;
  // The raw figures go to a private directory (mkdtemp, 0700): a predictable name in /tmp would let another user
  // plant a symlink the benchmark follows as the admin, or forge the figures (docs/security.md).
  PrivateDir scratch;
  std::string raw = a.raw;
  if (raw.empty()) {
    try {
      scratch = PrivateDir::make("paratune-measure");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune measure: %s\n", e.what());
      return kFailure;
    }
    raw = scratch.path + "/raw.json";
  }
  if (t.rank == 0)
    std::fprintf(stderr, "paratune measure: %d ranks, rendezvous %s:%d, fingerprint %s, budget %.0f s\n", t.world,
                 t.master_addr.c_str(), t.master_port, topo.fingerprint.c_str(), a.budget);
  std::vector<std::string> argv = {a.python, script, "--out", raw, "--budget", std::to_string(a.budget), "--device",
                                   a.device};
  if (a.quick) argv.push_back("--quick");
  const std::vector<std::string> env = {
      "RANK=" + std::to_string(t.rank), "WORLD_SIZE=" + std::to_string(t.world),
      "LOCAL_RANK=" + std::to_string(t.local_rank), "MASTER_ADDR=" + t.master_addr,
      "MASTER_PORT=" + std::to_string(t.master_port), "PARATUNE_FINGERPRINT=" + topo.fingerprint};
  const int rc = run_bounded(argv, env, hard_limit(a.budget));
  if (rc != 0) {
    std::fprintf(stderr, "paratune measure: rank %d: the benchmark (%s %s) exited with %d\n", t.rank, a.python.c_str(),
                 script.c_str(), rc);
    return kFailure;
  }
  if (t.rank != 0) return kOk;
  return write_profile(a, raw, topo);  // scratch (the raw file with it) goes when it goes out of scope
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<MeasureArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("-o,--output", a->out, "the hardware profile to write (TOML; rank 0)")->type_name("FILE")->required();
  app.add_option("--python", a->python, "the site's Python with PyTorch (default /usr/bin/python3)")->type_name("PATH");
  app.add_option("--script", a->script, "the benchmark (default " PARATUNE_DATADIR "/paratune/measure.py)")
      ->type_name("FILE");
  app.add_option("--budget", a->budget,
                 "seconds the benchmark's phases may take (default 480); it is stopped at the budget plus a\n"
                 "quarter (at least 20 s) for PyTorch's start: 10 minutes in all by default")
      ->type_name("S")
      ->check(options::number_in(0, 3600, true, false, "seconds in (0, 3600]"));
  app.add_option("--topology", a->topology,
                 "the node's topology file as the plugin's topology= gives it (%h: host name); default: probe")
      ->type_name("FILE");
  app.add_option("--device", a->device, "auto (GPU when PyTorch sees one), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--port", a->port, "the rendezvous port (default: from the job and step ids)")
      ->type_name("N")
      ->check(options::integer_in(1024, 65535));
  app.add_option("--raw", a->raw, "also keep the benchmark's raw figures (JSON, rank 0)")->type_name("FILE");
  app.add_flag("--quick", a->quick, "small sizes only (tests; the figures are not representative)");
  return [a] { return run(*a); };
}

Register reg{"measure", "measure this node type's GEMMs, memory and collectives into a hardware profile", setup};

}  // namespace
}  // namespace paratune::cli
