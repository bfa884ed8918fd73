// What the fuzz targets found, one test per bug, in the normal build (the inputs that found them are in
// tests/fuzz/regressions/<target>/ and are replayed by fuzz.replay.<target> as well).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"
#include "paratune/tuning/scenario_json.h"
#include "paratune/tuning/tuning_log.h"

using namespace paratune;

namespace {

// A hwloc 2.0 XML topology: one NUMA node, two PUs; `numa_attrs` and `pu1_attrs` complete their elements.
std::string small_xml(const std::string& numa_attrs, const std::string& pu1_attrs) {
  return R"(<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" )" +
         numa_attrs + R"( gp_index="2" local_memory="1000000"/>
    <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3"/>
    <object type="PU" os_index="1" cpuset="0x00000002" )" +
         pu1_attrs + R"( nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4"/>
  </object>
</topology>
)";
}

const std::string kGoodNuma = R"(complete_nodeset="0x00000001")";
const std::string kGoodPu = R"(complete_cpuset="0x00000002")";

std::string message_of(const std::string& xml) {
  try {
    probe::detail::load_hwloc_xml_text(xml, "t.xml");
  } catch (const probe::ProbeError& e) {
    return e.what();
  }
  return "<loaded>";
}

}  // namespace

// fuzz_hwloc_xml / fuzz_topology_file: hwloc 2.9.0 dereferences NULL (SIGSEGV in hwloc_bitmap_or) importing a
// NUMANode without complete_nodeset — one misspelt attribute in a topology= file crashed slurmd at start and every
// job step. Now the XML is tried in a child process first: a ProbeError, and the process lives on.
TEST(FuzzRegression, HwlocXmlNumaNodeWithoutCompleteNodesetIsAnErrorNotACrash) {
  EXPECT_EQ(message_of(small_xml(kGoodNuma, kGoodPu)), "<loaded>");
  const std::string m = message_of(small_xml(R"(complete_ngdeset="0x00000001")", kGoodPu));
  EXPECT_NE(m.find("t.xml: hwloc 2.x crashes on this XML"), std::string::npos) << m;
}

// Same class, other crash site (SIGSEGV in hwloc_bitmap_compare_first): a PU without complete_cpuset.
TEST(FuzzRegression, HwlocXmlPuWithoutCompleteCpusetIsAnErrorNotACrash) {
  const std::string m = message_of(small_xml(kGoodNuma, ""));
  EXPECT_NE(m.find("crashes on this XML"), std::string::npos) << m;
}

// The same through probe() with a topology file, as the plugin calls it.
TEST(FuzzRegression, ProbeOfACrashingHwlocXmlFileThrowsProbeError) {
  char path[] = "/tmp/paratune-fuzz-regression-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string xml = small_xml(R"(complete_ngdeset="0x00000001")", kGoodPu);
  ASSERT_EQ(::write(fd, xml.data(), xml.size()), static_cast<ssize_t>(xml.size()));
  ::close(fd);
  probe::ProbeOptions o;
  o.topology_file = path;
  EXPECT_THROW(probe::probe(o), probe::ProbeError);
  ::unlink(path);
}

// fuzz_tuning_log: a tuning-log line whose plan says "dp": 8805853726 — layout_from_json converted the double to
// int unchecked (UBSan: float-cast-overflow in tuning/src/scenario_json.cpp opt_num<int>). The header promises
// std::invalid_argument naming the field for a value that does not fit.
TEST(FuzzRegression, TuningLogPlanValueBeyondIntIsRejected) {
  EXPECT_THROW(tuning::layout_from_json(nlohmann::json{{"tp", 1}, {"pp", 1}, {"dp", 8805853726.0}, {"cp", 1}}),
               std::invalid_argument);
  const auto log = tuning::read_tuning_log(R"({"job_id":"1","plan":{"tp":1,"pp":1,"dp":8805853726,"cp":1}})"
                                           "\n");
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_FALSE(log.entries[0].layout.has_value());
  EXPECT_NE(log.entries[0].scenario_problem.find("dp"), std::string::npos) << log.entries[0].scenario_problem;
}
