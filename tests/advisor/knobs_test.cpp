// The knob table (knobs.h) and the scenario file: each knob has one name, and every key of the file reaches the
// scenario through the reader that walks the table.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>

#include "knob_samples.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;
using paratune::knob_test::sample_value;
using paratune::knob_test::shown;
using paratune::knob_test::toml_text;

namespace {

// A scenario file around one key's line: the tables a key of that section needs, each with the keys it must
// have (a line for one of those replaces it). `line` empty: the file without the key.
std::string file_with(const Knob& k, const std::string& line) {
  const std::string section = k.section, name = k.full_name();
  auto here = [&](const char* s) { return section == s ? line : std::string(); };
  auto needed = [&](const char* full, const char* text) {
    return !line.empty() && name == full ? "" : std::string(text);
  };
  std::string doc = "[model]\n" + needed("model.preset", "preset = \"deepseek-v3\"\n") + here("model");
  doc += "[training]\n" + needed("training.global_batch", "global_batch = 64\n") + here("training");
  if (section.rfind("cluster", 0) == 0)
    doc += "[cluster]\n" + needed("cluster.gpu", "gpu = \"h100-sxm5-80gb\"\n") + here("cluster");
  if (section == "cluster.gpu_spec") doc += "[cluster.gpu_spec]\n" + line;
  if (section == "cluster.nic") doc += "[[cluster.nic]]\n" + needed("cluster.nic.name", "name = \"mlx5_0\"\n") + line;
  if (section == "cluster.placement")
    doc += "[cluster.placement]\n" + needed("cluster.placement.nodes_per_leaf", "nodes_per_leaf = [1]\n") + line;
  if (section == "parallel") doc += "[parallel]\n" + line;
  return doc;
}

// Whether a value set for the knob in a scenario file comes back from the scenario the reader makes. `reader`
// turns the file's text into a scenario (the real one, or the control's that loses a line).
bool file_reaches_scenario(const Knob& k, const std::function<Scenario(const std::string&)>& reader, std::string& why) {
  const Scenario base = reader(file_with(k, ""));
  const KnobValue v = sample_value(k, base);
  const std::string line = std::string(k.name) + " = " + toml_text(k, v) + "\n";
  try {
    const KnobValue got = k.get(reader(file_with(k, line)));
    why = k.full_name() + ": set " + shown(v) + ", read back " + shown(got) + " from:\n" + file_with(k, line);
    return got == v;
  } catch (const std::exception& e) {
    why = k.full_name() + ": " + e.what();
    return false;
  }
}

Scenario read_file(const std::string& text) { return parse_scenario_toml(text, "k.toml", ClusterSource::Caller); }

}  // namespace

TEST(Knobs, OneNameEach) {
  std::set<std::string> full, spec_words;
  for (const Knob& k : knobs()) {
    EXPECT_TRUE(full.insert(k.full_name()).second) << k.full_name() << " twice";
    bool known_section = false;
    for (const char* s : knob_sections()) known_section = known_section || std::string(s) == k.section;
    EXPECT_TRUE(known_section) << k.full_name();
    EXPECT_TRUE(*k.help) << k.full_name() << " has no help";
    if (k.type == KnobType::Enum || k.type == KnobType::Word || k.type == KnobType::List) {
      EXPECT_FALSE(knob_values(k).empty()) << k.full_name();
    }
    if (!k.on(surface::kSpec)) continue;
    // A SPEC word (name, short form, old spelling) names one knob, and finds it.
    for (const char* w : {k.name, k.spec_key, k.alias}) {
      if (!*w) continue;
      EXPECT_TRUE(spec_words.insert(w).second) << "SPEC word " << w << " names two knobs";
      EXPECT_EQ(find_spec_knob(w), &k) << w;
    }
  }
  // The one old spelling the SPEC had: tp_overlap is tp_comm_overlap's.
  ASSERT_NE(find_spec_knob("tp_overlap"), nullptr);
  EXPECT_EQ(find_spec_knob("tp_overlap")->full_name(), "training.tp_comm_overlap");
  EXPECT_EQ(find_spec_knob("dp"), nullptr) << "dp is a file key, not a SPEC key";
  // Knobs without a short form have an empty one: an empty key must not find the first of them.
  EXPECT_EQ(find_spec_knob(""), nullptr);
}

// Every key of every scenario table: a value written in the file is the value in the scenario.
TEST(Knobs, EveryFileKeyReachesTheScenario) {
  int checked = 0;
  for (const Knob& k : knobs()) {
    if (!k.on(surface::kToml) || k.type == KnobType::Table) continue;
    std::string why;
    EXPECT_TRUE(file_reaches_scenario(k, read_file, why)) << why;
    ++checked;
  }
  EXPECT_GE(checked, 80);
}

// Control: a reader that drops the key's line (as a reader that does not know the key would) fails the check for
// every knob, so the check above can fail.
TEST(Knobs, EveryFileKeyReachesTheScenarioControl) {
  for (const Knob& k : knobs()) {
    if (!k.on(surface::kToml) || k.type == KnobType::Table) continue;
    const std::string line_start = std::string(k.name) + " = ";
    auto losing = [&](const std::string& text) {
      std::string kept, line;
      std::istringstream in(text);
      while (std::getline(in, line))
        if (line.rfind(line_start, 0) != 0 || line == "name = \"mlx5_0\"" || line == "nodes_per_leaf = [1]" ||
            line == "preset = \"deepseek-v3\"" || line == "global_batch = 64" || line == "gpu = \"h100-sxm5-80gb\"")
          kept += line + "\n";
      return read_file(kept);
    };
    std::string why;
    EXPECT_FALSE(file_reaches_scenario(k, losing, why)) << why;
  }
}

// The keys a table accepts are the table's: an unknown one is refused with the knob table's list.
TEST(Knobs, UnknownFileKeyListsTheTablesKeys) {
  try {
    read_file("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 8\n[parallel]\ntensor_parallel = 2\n");
    FAIL() << "accepted an unknown key";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("parallel.tensor_parallel: unknown key; valid: "), std::string::npos) << msg;
    for (const Knob* k : knobs_of("parallel"))
      EXPECT_NE(msg.find(k->name), std::string::npos) << k->name << ": " << msg;
  }
}
