#include "store/record_follower.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/errors.h"
#include "core/paths.h"
#include "store/records.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kAnchor = 64 << 10;  // a whole record line, mostly: its time and ids are in it

// An open file, closed on every way out.
struct Fd {
  int fd;
  explicit Fd(const fs::path& p) : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Up to `n` bytes from `at` (fewer where the file is shorter now).
std::string read_at(int fd, off_t at, size_t n, const fs::path& p) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::pread(fd, out.data() + got, n - got, at + off_t(got));
    if (k < 0) throw usage_error("cannot read " + p.string());
    if (k == 0) break;
    got += size_t(k);
  }
  out.resize(got);
  return out;
}

long long mtime_ns(const struct stat& st) { return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec; }

// The fields Revocation::matches reads, copied from the record.
json match_fields(const json& record) {
  json m = json::object();
  for (const char* key : {"variant", "source_sha256", "params"})
    if (const auto it = record.find(key); it != record.end()) m[key] = *it;
  return m;
}

}  // namespace

void RecordFollower::refresh() {
  std::set<fs::path> present;
  std::error_code ec;
  if (fs::is_directory(dir_, ec))
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.is_regular_file() && is_records_file(e.path())) present.insert(e.path());
  for (auto it = files_.begin(); it != files_.end();) it = present.count(it->first) ? std::next(it) : files_.erase(it);
  update_revocations();
  for (const auto& p : present) follow(p, files_[p]);
}

std::vector<const Record*> RecordFollower::records() const {
  std::vector<const Record*> out;
  for (const auto& [path, file] : files_)
    for (const auto* list : {&file.entries, &file.pending})
      for (const Entry& e : *list)
        if (!e.withdrawn) out.push_back(&e.record);
  return out;
}

void RecordFollower::read_text(const std::string& text, const std::string& origin, size_t first_line,
                               std::vector<Entry>& into) {
  RecordSet set;
  parse_records_text(text, origin, set, first_line);
  bytes_read_ += text.size();
  lines_parsed_ += size_t(std::count(text.begin(), text.end(), '\n'));
  for (const json& j : set.records) {
    RecordRead read = read_record(j);
    if (!read.record) continue;
    Entry e{std::move(*read.record), match_fields(j), false};
    e.withdrawn = withdrawn(e.match);
    into.push_back(std::move(e));
  }
}

void RecordFollower::follow(const fs::path& path, File& file) {
  Fd in(path);
  struct stat st {};
  if (in.fd < 0 || ::fstat(in.fd, &st) != 0) throw usage_error("cannot read " + path.string());
  const bool same = st.st_dev == file.dev && st.st_ino == file.ino;
  if (same && st.st_size == file.size && mtime_ns(st) == file.mtime_ns) return;  // untouched since
  const bool gz = path.extension() == ".gz";
  // Appended to (a .jsonl whose read part is still where it was), or to be read again whole.
  bool grew = same && !gz && st.st_size >= file.consumed;
  if (grew && file.consumed > 0) {
    const off_t at = file.consumed - off_t(file.anchor.size());
    grew = read_at(in.fd, at, file.anchor.size(), path) == file.anchor;
  }
  if (!grew) file = File{};
  file.dev = st.st_dev;
  file.ino = st.st_ino;
  file.size = st.st_size;
  file.mtime_ns = mtime_ns(st);
  file.pending.clear();
  if (gz) {  // read whole, as read_records reads it
    read_text(read_records_file(path), path.string(), 1, file.entries);
    return;
  }
  const std::string text = read_at(in.fd, file.consumed, size_t(st.st_size - file.consumed), path);
  const size_t end = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;  // of the complete lines
  if (end > 0) {
    read_text(text.substr(0, end), path.string(), file.lines + 1, file.entries);
    file.lines += size_t(std::count(text.begin(), text.begin() + long(end), '\n'));
    file.consumed += off_t(end);
    file.anchor = end >= kAnchor ? text.substr(end - kAnchor, kAnchor) : file.anchor + text.substr(0, end);
    if (file.anchor.size() > kAnchor) file.anchor.erase(0, file.anchor.size() - kAnchor);
  }
  // An unterminated last line: its record counts while it parses, and is read again next time.
  if (end < text.size()) {
    const size_t lines = lines_parsed_;
    read_text(text.substr(end), path.string(), file.lines + 1, file.pending);
    lines_parsed_ = lines;  // not a line yet
  }
}

void RecordFollower::update_revocations() {
  const fs::path file = dir_ / kRevocationsFile;
  std::error_code ec;
  std::optional<std::string> text;
  if (fs::is_directory(dir_, ec) && fs::exists(file, ec)) text = read_file(file);
  if (text == revocations_text_) return;
  // Parsed before anything changes: a bad file throws at every look, as read_records does.
  revocations_ = text ? parse_revocations(*text, file.string()) : std::vector<Revocation>{};
  revocations_text_ = std::move(text);
  for (auto& [path, f] : files_)
    for (auto* list : {&f.entries, &f.pending})
      for (Entry& e : *list) e.withdrawn = withdrawn(e.match);
}

bool RecordFollower::withdrawn(const json& match) const {
  return std::any_of(revocations_.begin(), revocations_.end(), [&](const Revocation& r) { return r.matches(match); });
}

}  // namespace evo
