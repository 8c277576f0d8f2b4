#include "core/leftovers.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace evo {

namespace fs = std::filesystem;

namespace {

bool mine(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && st.st_uid == ::getuid();
}

// Removes `p` (a file or a folder) when it is this user's and its owner `pid` is gone.
size_t remove_if_orphaned(const fs::path& p, pid_t pid) {
  if (pid <= 0 || pid == ::getpid() || !process_gone(pid) || !mine(p)) return 0;
  std::error_code ec;
  return fs::remove_all(p, ec) > 0 ? 1 : 0;
}

}  // namespace

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

pid_t pid_after(const std::string& name, const std::string& prefix, char sep) {
  if (name.rfind(prefix, 0) != 0) return 0;
  const char* digits = name.c_str() + prefix.size();
  char* end = nullptr;
  const long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != sep || pid <= 0) return 0;
  return pid_t(pid);
}

size_t remove_orphaned_work_files(const fs::path& temp_dir) {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(temp_dir, ec)) {
    const std::string name = e.path().filename().string();
    // "evo-generator-" first: "evo-" would read "generator" as no pid and skip it anyway.
    pid_t pid = pid_after(name, "evo-generator-", '-');
    if (!pid) pid = pid_after(name, "evo-", '-');
    removed += remove_if_orphaned(e.path(), pid);
  }
  return removed;
}

size_t remove_orphaned_temp_files(const fs::path& dir) {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t tmp = name.rfind(".tmp.");
    if (tmp == std::string::npos) continue;
    removed += remove_if_orphaned(e.path(), pid_after(name.substr(tmp), ".tmp.", '.'));
  }
  return removed;
}

}  // namespace evo
