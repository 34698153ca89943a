#include "tune/tuning_db.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace spgen::tune {

using json = nlohmann::json;

std::filesystem::path tuning_db_path(const std::string& flag) {
  std::string chosen = flag;
  if (chosen.empty())
    if (const char* env = std::getenv("SPGEN_TUNE_DB"); env && *env) chosen = env;
  if (chosen == "off") return {};
  if (!chosen.empty()) return chosen;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "spgen" / "tune.jsonl";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "spgen" / "tune.jsonl";
  return {};
}

json db_record_json(const DbRecord& r) {
  return {{"schema", kTuningDbSchema}, {"key", r.key},   {"input", r.input},  {"labels", r.labels},
          {"median_ms", r.median_ms},  {"ok", r.ok},     {"winner", r.winner}};
}

std::vector<DbRecord> read_tuning_db(const std::filesystem::path& path) {
  std::vector<DbRecord> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("schema", 0) != kTuningDbSchema) continue;
    try {
      records.push_back({j.at("key").get<std::string>(), j.at("input"), j.at("labels"), j.at("median_ms").get<double>(),
                         j.at("ok").get<bool>(), j.at("winner").get<bool>()});
    } catch (const json::exception&) {
      continue;  // a record missing a field: not ours to repair
    }
  }
  return records;
}

bool append_tuning_db(const std::filesystem::path& path, const std::vector<DbRecord>& records) {
  if (path.empty() || records.empty()) return true;
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ostringstream text;
  for (const DbRecord& r : records) text << db_record_json(r).dump() << '\n';
  std::ofstream out(path, std::ios::app);
  if (!out) return false;
  out << text.str();
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace spgen::tune
