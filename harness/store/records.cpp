#include "store/records.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

#include "core/paths.h"
#include "store/atomic_file.h"
#include "store/record.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr size_t kMaxLine = 16 << 20;  // a record line larger than this is not one of ours
constexpr int kMaxDepth = 64;          // nesting deeper than this is rejected before parsing

// Rejects pathological nesting without recursing (nlohmann's parser recurses per level).
bool nesting_ok(const std::string& s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}
}  // namespace

void parse_records_text(const std::string& text, const std::string& origin, RecordSet& out) {
  size_t start = 0, line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last_unterminated = end == std::string::npos;
    if (last_unterminated) end = text.size();
    std::string line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", origin, line_no);
    if (line.size() > kMaxLine) {
      out.problems.push_back(where + ": line longer than 16 MiB");
      continue;
    }
    if (!nesting_ok(line)) {
      out.problems.push_back(where + ": JSON nested deeper than 64 levels");
      continue;
    }
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      // A writer killed mid-append leaves an unterminated last line; it was never reported
      // written (append returns only after fsync of the whole line), so it is not a lost record.
      (last_unterminated ? out.warnings : out.problems)
          .push_back(where + ": not valid JSON" + (last_unterminated ? " (torn last line, ignored)" : ""));
      continue;
    }
    std::string bad = validate_record(j);
    if (!bad.empty()) {
      out.problems.push_back(where + ": " + bad);
      continue;
    }
    const std::string v = j["schema_version"];
    if (v != kRecordSchemaVersion && v.rfind("1.", 0) == 0)
      out.warnings.push_back(where + ": schema_version " + v + " is newer than this evo's " + kRecordSchemaVersion);
    out.records.push_back(std::move(j));
  }
}

RecordSet read_records(const fs::path& dir_or_file) {
  RecordSet out;
  std::vector<fs::path> files;
  if (fs::is_directory(dir_or_file)) {
    for (const auto& e : fs::directory_iterator(dir_or_file))
      if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else if (fs::exists(dir_or_file)) {
    files.push_back(dir_or_file);
  } else {
    out.problems.push_back(dir_or_file.string() + ": no such file or directory");
  }
  for (const auto& f : files) parse_records_text(read_file(f), f.string(), out);
  if (fs::is_directory(dir_or_file) && fs::exists(dir_or_file / kRevocationsFile))
    out.withdrawn = withdraw(read_revocations(dir_or_file / kRevocationsFile), out.records);
  return out;
}

std::unique_ptr<FileLock> lock_results(const fs::path& results_dir) {
  if (!fs::is_directory(results_dir) || ::access(results_dir.c_str(), W_OK) != 0) return nullptr;
  return std::make_unique<FileLock>(results_dir / ".lock");
}

void append_record(const fs::path& file, const json& record) {
  append_line_durable(file, record.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace evo
