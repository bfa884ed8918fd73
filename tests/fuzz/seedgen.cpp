// fuzz_seedgen SRC_ROOT OUT_DIR: writes the seed corpus of every fuzz target under OUT_DIR/<what>/ from the real
// inputs in the source tree, so that no copies are committed:
//   tests/fixtures/topologies/{hwloc-xml,nccl-topo}/*.xml   hwloc_xml, nccl_topo, topology_file; their JSON
//                                                            (probe --json) for topology_json
//   tests/fixtures/logs/*.log                                framework_log
//   etc/policy.toml, docs/policy.md ```toml blocks           policy
//   docs/model.md ```toml blocks                             scenario_toml, decision (as @FILE)
//   tests/fuzz/seeds/<what>.txt                              hand-written cases (entries separated by "----" lines)
//   a few real decisions (builtin topologies)                tuning_log lines, calibration TOML
//   deeply nested TOML and JSON (issue 14)                    scenario_toml, decision, policy, calibration,
//                                                            topology_json, topology_file, tuning_log, report
// Targets that read a selector byte first (see each fuzz_<what>.cpp) get seeds with a few selector values.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "paratune/planner/decision.h"
#include "job/tuning_record.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/probe/probe.h"

namespace fs = std::filesystem;
using namespace paratune;

namespace {

fs::path g_src, g_out;
int g_count = 0;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void put(const std::string& what, const std::string& name, const std::string& data) {
  const fs::path dir = g_out / what;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << data;
  ++g_count;
}

// With selector bytes: one seed per selector.
void put_sel(const std::string& what, const std::string& name, const std::string& data,
             const std::vector<std::string>& selectors) {
  int i = 0;
  for (const auto& s : selectors) put(what, name + ".s" + std::to_string(i++), s + data);
}

std::vector<fs::path> files(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// tests/fuzz/seeds/<what>.txt: entries separated by lines that are exactly "----".
std::vector<std::string> entries(const std::string& what) {
  std::vector<std::string> out;
  const fs::path p = g_src / "tests/fuzz/seeds" / (what + ".txt");
  if (!fs::exists(p)) return out;
  std::string text = slurp(p), cur;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line == "----") {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += line;
      if (nl != std::string::npos) cur += '\n';
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The ```toml blocks of a Markdown file.
std::vector<std::string> toml_blocks(const fs::path& md) {
  std::vector<std::string> out;
  if (!fs::exists(md)) return out;
  const std::string text = slurp(md);
  size_t pos = 0;
  while ((pos = text.find("```toml\n", pos)) != std::string::npos) {
    pos += 8;
    const size_t end = text.find("```", pos);
    if (end == std::string::npos) break;
    out.push_back(text.substr(pos, end - pos));
    pos = end + 3;
  }
  return out;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Issue 14: TOML++ recursed once per table-header and dotted-key segment, and 50,000 of them (100 kB) overflowed
// the stack (SIGSEGV in slurmstepd, `paratune predict`); deep inline tables and arrays stop at TOML++'s own
// limit (256) but belong to the same depth rule (advisor/toml_guard.h). Generated here, not committed under
// regressions/ (100 kB each), for every target that reads TOML; ci-fuzz.sh runs those with -max_len=1048576 so
// that libFuzzer keeps them whole.
std::vector<std::pair<std::string, std::string>> deep_toml() {
  constexpr int n = 50000;
  const std::string path = "a" + repeat(".a", n - 1);
  return {{"deep-table-header", "[" + path + "]\n"},
          {"deep-array-of-tables-header", "[[" + path + "]]\n"},
          {"deep-dotted-key", path + " = 1\n"},
          {"deep-dotted-key-in-inline-table", "a = {" + path + " = 1}\n"},
          {"deep-inline-table", repeat("a = {", 1000) + "b = 1" + repeat("}", 1000) + "\n"},
          {"deep-array", "a = " + repeat("[", n) + "1" + repeat("]", n) + "\n"}};
}

std::string chomp(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_seedgen SRC_ROOT OUT_DIR\n";
    return 2;
  }
  g_src = argv[1];
  g_out = argv[2];
  try {
    fs::remove_all(g_out);
    const std::string Z(1, '\0');
    // --- topologies
    const fs::path topo = g_src / "tests/fixtures/topologies";
    std::vector<std::pair<std::string, std::string>> jsons;
    for (const auto& sub : {"hwloc-xml", "nccl-topo"}) {
      for (const auto& p : files(topo / sub, ".xml")) {
        const std::string text = slurp(p), name = p.filename().string();
        put(std::string(sub) == "hwloc-xml" ? "hwloc_xml" : "nccl_topo", name, text);
        put_sel("topology_file", name, text, {Z, "\x05"});
        try {
          probe::ProbeOptions o;
          o.topology_file = p.string();
          const std::string j = probe::to_json(probe::probe(o));
          jsons.emplace_back(name + ".json", j);
        } catch (const std::exception& e) {
          std::cerr << "seedgen: " << p << ": " << e.what() << " (no JSON seed)\n";
        }
      }
    }
    for (const auto& [name, j] : jsons) {
      put("topology_json", name, j);
      put_sel("topology_file", name, j, {Z, "\x03"});
    }
    for (const auto& e : entries("topology_json")) put("topology_json", "hand-" + std::to_string(g_count), e);

    // --- plugin inputs
    for (const auto& e : entries("option_spec")) put("option_spec", "seed-" + std::to_string(g_count), chomp(e));
    for (const auto& e : entries("plugin_config")) put("plugin_config", "seed-" + std::to_string(g_count), chomp(e));
    for (const auto& e : entries("allocation")) put("allocation", "seed-" + std::to_string(g_count), e);

    // --- scenario files
    std::vector<std::string> scenarios = entries("scenario_toml");
    for (const auto& b : toml_blocks(g_src / "docs/model.md")) scenarios.push_back(b);
    int i = 0;
    for (const auto& s : scenarios) {
      put_sel("scenario_toml", "scenario-" + std::to_string(i), s, {Z, "\x01"});
      put_sel("decision", "scenario-" + std::to_string(i++), "@s.toml\n" + s, {Z, "\x0b", "\x81"});
    }
    for (const auto& e : entries("decision"))
      put_sel("decision", "spec-" + std::to_string(g_count), e, {Z, "\x01", "\x0f", "\x27", "\x9e"});

    // --- policies
    if (fs::exists(g_src / "etc/policy.toml")) put("policy", "etc-policy.toml", slurp(g_src / "etc/policy.toml"));
    i = 0;
    for (const auto& b : toml_blocks(g_src / "docs/policy.md")) put("policy", "docs-" + std::to_string(i++), b);
    for (const auto& e : entries("policy")) put("policy", "hand-" + std::to_string(g_count), e);

    // --- nesting deeper than TOML++'s stack (issue 14)
    for (const auto& [name, text] : deep_toml()) {
      put_sel("scenario_toml", name, text, {Z, "\x01"});
      put("decision", name, Z + "@s.toml\n" + text);
      put("policy", name, text);
      put("calibration", name, text);
    }
    // JSON: nlohmann parses any depth without recursion, but copying or dumping a value recurses (probe::from_json
    // copied a sub-object: SIGSEGV). Report lines are at most 4 kB.
    const std::string deep_json = std::string(400000, '[') + std::string(400000, ']');
    const std::string deep_topology = R"({"topology": {"x": )" + deep_json + "}}";
    put("topology_json", "deep-under-topology", deep_topology);
    put_sel("topology_file", "deep-under-topology", deep_topology, {Z});
    put_sel("tuning_log", "deep-plan", R"({"job_id":"1","plan":)" + deep_json + "}\n", {Z});
    put_sel("report", "deep", R"({"step_time_s":1.5,"x":)" + repeat("[", 2000) + repeat("]", 2000) + "}\n",
            {"\x02"});

    // --- sysfs strings (two selector bytes: ibverbs width/speed codes)
    for (const auto& e : entries("sysfs")) put_sel("sysfs", "seed-" + std::to_string(g_count), chomp(e),
                                                   {std::string("\x04\x10", 2), std::string("\x02\x00", 2)});

    // --- tuning log lines from real decisions, hostlists and dates
    std::string log;
    long long t = 1740787200;
    for (const auto& [builtin, spec_text, gpus] :
         std::vector<std::tuple<std::string, std::string, int>>{{"builtin:nvidia-dgx2", "llama3-8b", 8},
                                                                {"builtin:lassen", "gpt3-1.3b,mode=suggest", 4},
                                                                {"builtin:nvidia-dgx2", "llama2-13b,gbs=512,framework=deepspeed", 16}}) {
      planner::DecisionInput in;
      probe::ProbeOptions o;
      o.topology_file = builtin;
      in.topology = probe::probe(o);
      in.spec = planner::parse_option_spec(spec_text);
      in.alloc.gpus_on_node = gpus;
      in.alloc.nodes = 2;
      in.mode = in.spec.mode.value_or(planner::Mode::Apply);
      const planner::Decision d = planner::decide(in);
      job::JobIdentity who;
      who.job_id = std::to_string(t % 1000);
      who.step_id = "batch";
      who.user = "alice";
      who.partition = "gpu";
      who.hostname = "node01";
      who.uid = 1000;
      who.nodes = 2;
      who.gpus_on_node = gpus;
      log += job::tuning_record(who, in.spec, d, {}, t++).dump() + "\n";
    }
    put_sel("tuning_log", "decisions.jsonl", log, {Z});
    for (const auto& e : entries("tuning_log")) put_sel("tuning_log", "seed-" + std::to_string(g_count), chomp(e), {"\x01"});

    // --- calibration: a real file as the CLI writes it, and hand-written ones
    advisor::Calibration c;
    c.generated = "2025-03-01T12:00:00Z";
    c.source = "tuning.jsonl";
    c.entries.push_back({"h100-sxm5-80gb", "infiniband", "", 0.93, 0.88, 12, 4, 0.21, 0.05});
    c.entries.push_back({"a100-sxm4-80gb", "", "megatron", 1.02, 1.0, 3, 0, 0.1, 0.08});
    put("calibration", "generated.toml", advisor::to_toml(c));
    for (const auto& e : entries("calibration")) put("calibration", "hand-" + std::to_string(g_count), e);

    // --- throughput reports and framework logs
    for (const auto& e : entries("report")) put_sel("report", "seed-" + std::to_string(g_count), e, {"\x02", "\x03"});
    for (const auto& p : files(g_src / "tests/fixtures/logs", ".log"))
      put_sel("framework_log", p.filename().string(), slurp(p), {Z, "\x10"});
  } catch (const std::exception& e) {
    std::cerr << "seedgen: " << e.what() << "\n";
    return 1;
  }
  std::cout << "seedgen: " << g_count << " seeds under " << g_out.string() << "\n";
  return 0;
}
