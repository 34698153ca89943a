// The tuning database: every candidate `spgen tune` measured, one JSON line each in
// ~/.cache/spgen/tune.jsonl (or $SPGEN_TUNE_DB, or --db; "off": none), with a schema version.
// It seeds later searches: the winner on the most similar input tuned before for the same spec,
// target and machine is proposed first, and earlier measurements of the same input feed the model.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace spgen::tune {

inline constexpr int kTuningDbSchema = 1;

// One measured candidate. `key` says what it is comparable with: spec hash, target, value and
// index types, machine and threads; `input` the inputs' features; `labels` the point's choices.
struct DbRecord {
  std::string key;
  nlohmann::json input;   // {tensor: InputFeatures JSON}
  nlohmann::json labels;  // point_labels
  double median_ms = 0;
  bool ok = false;
  bool winner = false;  // the point a tuning run chose
};

// Where the database is: `flag` (--db) if given, else $SPGEN_TUNE_DB, else $XDG_CACHE_HOME/spgen,
// else ~/.cache/spgen; empty when "off" or no home is known.
std::filesystem::path tuning_db_path(const std::string& flag);

// The records of a file; lines of another schema or not JSON are skipped (a newer spgen's, a
// line cut short by a crash), a missing file is empty.
std::vector<DbRecord> read_tuning_db(const std::filesystem::path& path);

// Appends records (one write; best effort: a database that cannot be written costs only what it
// would have saved, and is reported as a warning by the caller when this returns false).
bool append_tuning_db(const std::filesystem::path& path, const std::vector<DbRecord>& records);

nlohmann::json db_record_json(const DbRecord& record);

}  // namespace spgen::tune
