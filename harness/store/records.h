// Reading and appending results/*.jsonl. Appends are durable (fsync under flock); reads
// skip nothing silently: a bad line is reported with file:line and what is wrong.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {

struct RecordSet {
  std::vector<nlohmann::json> records;  // valid records, in file order (files sorted by name)
  std::vector<std::string> problems;    // "results/x.jsonl:12: field 'task' missing ..."
  std::vector<std::string> warnings;    // newer minor schema versions, torn last lines
};

// Reads every *.jsonl under `dir` (not recursive), or one file.
RecordSet read_records(const std::filesystem::path& dir_or_file);
// Parses one JSONL text (for tests and fuzzing); `origin` prefixes messages.
void parse_records_text(const std::string& text, const std::string& origin, RecordSet& out);

void append_record(const std::filesystem::path& file, const nlohmann::json& record);

}  // namespace evo
