#include "tuning_line.h"

namespace paratune::job {

void add_report_fields(nlohmann::json& line, nlohmann::json fields, const std::vector<std::string>& nodes) {
  if (fields.contains("suspect") && fields["suspect"].is_object()) fields["suspect"]["nodes"] = nodes;
  if (fields.contains("oom") && fields["oom"].is_object()) {
    const auto& plan_prediction = line["predicted"];
    if (plan_prediction.is_object() && plan_prediction.contains("memory_gib_per_gpu"))
      fields["oom"]["predicted_memory_gib"] = plan_prediction["memory_gib_per_gpu"];
  }
  for (const char* key : {"report", "achieved", "ratio", "suspect", "oom"})
    if (fields.contains(key)) line[key] = fields[key];
}

void add_node_checks(nlohmann::json& line, nlohmann::json checks) {
  if (checks.contains("mismatch") && checks["mismatch"].is_array())
    for (const auto& m : checks["mismatch"])
      line["notes"].push_back("node " + m.value("host", "") + " (step " + m.value("step", "") +
                              ") has topology fingerprint " + m.value("fingerprint", "") + ", the plan was made for " +
                              m.value("plan_fingerprint", ""));
  line["node_checks"] = std::move(checks);
}

void line_events(const nlohmann::json& line, MetricsEvents& ev) {
  ev.decision_mode = line.value("mode", "");
  if (line.contains("scenario") && line["scenario"].is_object() && line["scenario"].contains("training"))
    ev.decision_framework = line["scenario"]["training"].value("framework", "");
  if (line.contains("policy_changes") && line["policy_changes"].is_array()) ev.policy_changes = line["policy_changes"].size();
  if (line.contains("ratio") && line["ratio"].is_number()) ev.ratio = line["ratio"].get<double>();
  ev.suspect = line.contains("suspect");
  if (line.contains("oom")) {
    ev.oom_gpu = line.value("gpu_model", "");
    ev.oom_framework = ev.decision_framework;
  }
  const std::string report = line.value("report", "");
  if (report == "missing") ev.failures.push_back("report_missing");
  else if (report.rfind("ok", 0) != 0) ev.failures.push_back("report_invalid");
}

}  // namespace paratune::job
