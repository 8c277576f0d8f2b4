// Reading and appending results/*.jsonl. Appends are durable (fsync under flock); reads
// skip nothing silently: a bad line is reported with file:line and what is wrong. A finished
// records file may be kept gzip-compressed as *.jsonl.gz (scripts/pack_results.sh): the records
// are the bulk of the repository, and every device call carries the whole working tree.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/atomic_file.h"
#include "store/revocations.h"

namespace evo {

struct RecordSet {
  std::vector<nlohmann::json> records;  // valid records, in file order (files sorted by name)
  std::vector<std::string> problems;    // "results/x.jsonl:12: field 'task' missing ..."
  std::vector<std::string> warnings;    // newer minor schema versions, torn last lines
  // A directory's <dir>/revoked.json (store/revocations.h): per entry, the records it took out of
  // `records`. Every consumer of the directory sees the same withdrawn set.
  std::vector<Withdrawal> withdrawn;
};

// A records file by its name: *.jsonl, or *.jsonl.gz (read decompressed; never appended to).
bool is_records_file(const std::filesystem::path& p);
// A records file's text, decompressed where it is gzip; throws usage_error naming the file when it
// cannot be read or its compressed stream is damaged.
std::string read_records_file(const std::filesystem::path& p);

// Reads every records file (*.jsonl, *.jsonl.gz) under `dir` (not recursive), then withdraws what <dir>/revoked.json
// revokes (a bad revoked.json is a usage error naming the file and field). One file is read as it is: a single log (evo
// gate --replay, evo merge's inputs) carries no revocations.
RecordSet read_records(const std::filesystem::path& dir_or_file);
// Parses one JSONL text (for tests and fuzzing); `origin` prefixes messages, whose line numbers
// start at `first_line` (a part of a file read from the middle: store/record_follower.h).
void parse_records_text(const std::string& text, const std::string& origin, RecordSet& out, size_t first_line = 1);

void append_record(const std::filesystem::path& file, const nlohmann::json& record);

// Serializes everything that derives populations from the records of `results_dir` (evo merge,
// evo population rebuild, a run's refresh) on <results_dir>/.lock (flock; git ignores it): each
// reads the records and writes the populations under it, so a derivation from older records is
// never written after a newer one. A folder this process cannot write to cannot change under it
// either, so there is no lock then (nullptr), and none for a folder that does not exist.
std::unique_ptr<FileLock> lock_results(const std::filesystem::path& results_dir);

}  // namespace evo
