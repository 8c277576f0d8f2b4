#include "store/records.h"

#include <fmt/format.h>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include "core/errors.h"
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

bool is_records_file(const fs::path& p) {
  const std::string name = p.filename().string();
  const auto ends_with = [&](const std::string& tail) {
    return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with(".jsonl") || ends_with(".jsonl.gz");
}

std::string read_records_file(const fs::path& p) {
  if (p.extension() != ".gz") return read_file(p);
  gzFile in = gzopen(p.c_str(), "rb");
  if (in == nullptr) throw usage_error("cannot read " + p.string());
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(in, buf, sizeof buf)) > 0) {
    text.append(buf, size_t(n));
    // A stream that inflates past any file of ours is not a records file (a decompression bomb).
    if (text.size() > (size_t(1) << 32)) break;
  }
  // A stream cut off mid-way reads as far as it goes and then reports Z_BUF_ERROR (here or at
  // gzclose): records silently missing, unless asked.
  int err = Z_OK;
  const char* message = gzerror(in, &err);
  std::string why = n < 0 || (err != Z_OK && err != Z_STREAM_END) ? std::string(message) : "";
  if (text.size() > (size_t(1) << 32)) why = "inflates past 4 GiB";
  const int closed = gzclose(in);
  if (why.empty() && closed != Z_OK) why = closed == Z_BUF_ERROR ? "cut off mid-stream" : "cannot close";
  if (!why.empty()) throw usage_error(p.string() + ": damaged gzip stream (" + why + ")");
  return text;
}

void parse_records_text(const std::string& text, const std::string& origin, RecordSet& out, size_t first_line) {
  size_t start = 0, line_no = first_line - 1;
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
      if (e.is_regular_file() && is_records_file(e.path())) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else if (fs::exists(dir_or_file)) {
    files.push_back(dir_or_file);
  } else {
    out.problems.push_back(dir_or_file.string() + ": no such file or directory");
  }
  for (const auto& f : files) parse_records_text(read_records_file(f), f.string(), out);
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
