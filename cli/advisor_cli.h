// Helpers that `paratune advise` and `paratune predict` share (defined in cmd_advise.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/probe/topology.h"

namespace paratune::cli::advisor_cli {

// A scenario file as read, and the node its topology describes (none when neither the file nor --topology names one).
struct ScenarioFacts {
  advisor::Scenario scenario;
  std::optional<probe::Topology> topology;
};
ScenarioFacts read_scenario(const std::string& path, const std::string& topology_override);
// Scenario file + topology ([cluster] topology = "..." relative to the file, or --topology): cluster facts probed
// over the file's [cluster] (planner::cluster_over_scenario), validated.
advisor::Scenario load_scenario(const std::string& path, const std::string& topology_override,
                                std::vector<std::string>& notes);
// A calibration file (`paratune calibrate` output), read and parsed; throws std::invalid_argument naming the file.
advisor::Calibration read_calibration(const std::string& path);
// --calibration FILE: the site's fitted efficiencies (`paratune calibrate` output) for this scenario.
advisor::ModelParams load_calibration(const std::string& path, const advisor::Scenario& s);
// Its memory head-room for this scenario's GPU and framework ([[memory]], 0 when none).
double load_headroom(const std::string& path, const advisor::Scenario& s);
nlohmann::json layout_json(const advisor::Layout& l);
nlohmann::json prediction_json(const advisor::Prediction& p);
std::string layout_text(const advisor::Layout& l);
void print_breakdown(const advisor::Prediction& p);

}  // namespace paratune::cli::advisor_cli
