#include "run/elite_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "core/errors.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "core/subprocess.h"

namespace evo {

namespace {

std::optional<fs::path> find_git() {
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string dir; std::getline(in, dir, ':');)
      if (!dir.empty() && ::access((fs::path(dir) / "git").c_str(), X_OK) == 0) return fs::path(dir) / "git";
  }
  return std::nullopt;
}

// git's stdout, or nullopt when git fails (not a repository, an unknown path).
std::optional<std::string> git(const fs::path& tool, const fs::path& root, std::vector<std::string> args) {
  std::vector<std::string> argv{tool.string(), "-C", root.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_with_timeout(argv, std::chrono::milliseconds(30000), {}, size_t(8) << 20);
  if (!r.status.exited || r.status.code != 0) return std::nullopt;
  return r.out;
}

// A path as records keep it: relative, inside the repository.
bool plain_relative(const std::string& p) {
  return !p.empty() && p[0] != '/' && p.find("..") == std::string::npos && p.find('\0') == std::string::npos;
}

// The newest commit whose version of `path` has the hash, and that version.
std::optional<std::pair<std::string, std::string>> from_history(const fs::path& root, const std::string& path,
                                                                const std::string& sha256) {
  auto tool = find_git();
  if (!tool) return std::nullopt;
  auto commits = git(*tool, root, {"log", "--format=%H", "--", path});
  if (!commits) return std::nullopt;
  std::istringstream in(*commits);
  for (std::string commit; std::getline(in, commit);) {
    if (commit.empty()) continue;
    auto text = git(*tool, root, {"show", commit + ":" + path});
    if (text && sha256_hex(*text) == sha256) return std::make_pair(commit, *text);
  }
  return std::nullopt;
}

EliteSource as_recorded(const std::string& text, const EliteRef& ref, const std::string& origin) {
  Variant v = parse_variant(text, origin);
  v.id = ref.variant_id;
  const auto slash = ref.variant_id.find('/');
  v.stage = std::atoi(ref.variant_id.substr(0, slash).c_str());
  v.path = ref.source_path;
  return {std::move(v), origin};
}

}  // namespace

std::optional<EliteSource> find_elite_source(const Context& ctx, const EliteRef& ref, std::string* why) {
  if (!plain_relative(ref.source_path)) {
    if (why) *why = fmt::format("the recorded source path '{}' is not inside the repository", ref.source_path);
    return std::nullopt;
  }
  const fs::path file = ctx.root / ref.source_path;
  if (fs::is_regular_file(file)) {
    std::string text = read_file(file);
    if (sha256_hex(text) == ref.sha256) return as_recorded(text, ref, ref.source_path);
  }
  const fs::path stored = ctx.root / "results" / "sources" / (ref.sha256 + ".cu");
  if (fs::is_regular_file(stored)) {
    std::string text = read_file(stored);
    if (sha256_hex(text) == ref.sha256) return as_recorded(text, ref, "results/sources/" + ref.sha256 + ".cu");
  }
  if (auto found = from_history(ctx.root, ref.source_path, ref.sha256))
    return as_recorded(found->second, ref, fmt::format("git {}:{}", found->first.substr(0, 12), ref.source_path));
  if (why)
    *why =
        fmt::format("no source of {} with sha256 {} (searched {}, results/sources/, and the git history of the path)",
                    ref.variant_id, ref.sha256.substr(0, 12), ref.source_path);
  return std::nullopt;
}

}  // namespace evo
