#include "paratune/tuning/calibration_diff.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace paratune::tuning {

using advisor::CalibrationEntry;
using advisor::MemoryEntry;

namespace {

std::string num(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string any(const std::string& s) { return s.empty() ? "any" : s; }

std::string name(const CalibrationEntry& e) { return e.gpu + "/" + any(e.fabric) + "/" + any(e.framework); }
std::string name(const MemoryEntry& e) { return "memory " + e.gpu + "/" + any(e.framework); }

// "compute_scale 0.900 -> 0.831" when the printed figures differ, "" otherwise.
std::string moved(const char* what, double a, double b, const char* f) {
  const std::string x = num(f, a), y = num(f, b);
  return x == y ? "" : std::string(what) + " " + x + " -> " + y;
}

void join(std::string& out, const std::string& part) {
  if (!part.empty()) out += (out.empty() ? "" : ", ") + part;
}

void entries(const std::vector<CalibrationEntry>& before, const std::vector<CalibrationEntry>& after,
             std::vector<std::string>* out) {
  std::map<std::tuple<std::string, std::string, std::string>, const CalibrationEntry*> old;
  for (const auto& e : before) old[{e.gpu, e.fabric, e.framework}] = &e;
  for (const auto& e : after) {
    const auto it = old.find({e.gpu, e.fabric, e.framework});
    const std::string jobs = " (" + std::to_string(e.samples) + " jobs)";
    if (it == old.end()) {
      out->push_back(name(e) + ": new entry, compute_scale " + num("%.3f", e.compute_scale) + ", network_scale " +
                     num("%.3f", e.network_scale) + jobs);
      continue;
    }
    std::string change;
    join(change, moved("compute_scale", it->second->compute_scale, e.compute_scale, "%.3f"));
    join(change, moved("network_scale", it->second->network_scale, e.network_scale, "%.3f"));
    if (!change.empty()) out->push_back(name(e) + ": " + change + jobs);
    old.erase(it);
  }
  for (const auto& [k, e] : old) out->push_back(name(*e) + ": entry removed (the shipped parameters apply)");
}

void memory(const std::vector<MemoryEntry>& before, const std::vector<MemoryEntry>& after,
            std::vector<std::string>* out) {
  std::map<std::pair<std::string, std::string>, const MemoryEntry*> old;
  for (const auto& e : before) old[{e.gpu, e.framework}] = &e;
  for (const auto& e : after) {
    const auto it = old.find({e.gpu, e.framework});
    const double was = it == old.end() ? 0 : it->second->headroom_gib;
    if (const std::string m = moved("head-room", was, e.headroom_gib, "%.1f GiB"); !m.empty())
      out->push_back(name(e) + ": " + m + (it == old.end() ? " (new entry)" : ""));
    if (it != old.end()) old.erase(it);
  }
  for (const auto& [k, e] : old) out->push_back(name(*e) + ": entry removed (head-room " + num("%.1f", e->headroom_gib) + " GiB -> 0)");
}

}  // namespace

std::vector<std::string> calibration_changes(const advisor::Calibration& before, const advisor::Calibration& after) {
  std::vector<std::string> out;
  entries(before.entries, after.entries, &out);
  memory(before.memory, after.memory, &out);
  if (out.empty()) out.push_back("unchanged");
  return out;
}

}  // namespace paratune::tuning
