#include "core/paths.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/errors.h"

namespace evo {

namespace {
bool is_root(const fs::path& p) { return fs::exists(p / "gates" / "gates.json") && fs::is_directory(p / "variants"); }
}  // namespace

fs::path self_executable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw environment_error("cannot find the evo executable through /proc/self/exe");
  return p;
}

fs::path evo_executable() {
  if (const char* e = std::getenv("EVO_EXECUTABLE"); e && *e) return e;
  return self_executable();
}

fs::path repo_root() {
  if (const char* env = std::getenv("EVO_ROOT")) {
    if (!is_root(env)) throw usage_error(std::string("EVO_ROOT=") + env + " has no gates/gates.json and variants/");
    return fs::canonical(env);
  }
  for (fs::path p = fs::current_path(); !p.empty(); p = p.parent_path()) {
    if (is_root(p)) return p;
    if (p == p.root_path()) break;
  }
  for (fs::path p = self_executable().parent_path(); !p.empty(); p = p.parent_path()) {
    if (is_root(p)) return p;
    if (p == p.root_path()) break;
  }
  throw usage_error("cannot find the evo repository: run evo inside it or set EVO_ROOT");
}

fs::path default_store_dir(const std::string& folder) {
  try {
    return repo_root() / folder;
  } catch (const std::exception&) {  // no repository (or no working directory): a command that
    return folder;                   // needs one says so itself
  }
}

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "evo";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "evo";
  return fs::temp_directory_path() / "evo-cache";
}

std::optional<fs::path> cuda_include_dir() {
  std::vector<fs::path> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) candidates.emplace_back(fs::path(v) / "include");
  // Next to the libnvrtc this process loaded: <toolkit>/lib64/libnvrtc.so -> <toolkit>/include.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
    fs::path lib = fs::weakly_canonical(info.dli_fname);
    candidates.push_back(lib.parent_path().parent_path() / "include");
    candidates.push_back(lib.parent_path().parent_path().parent_path() / "include");
  }
  candidates.emplace_back("/usr/local/cuda/include");
  for (const auto& c : candidates)
    if (fs::exists(c / "cuda_fp16.h")) return fs::weakly_canonical(c);
  return std::nullopt;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) throw usage_error("cannot read " + p.string());
  // One read into a buffer of the file's size: outputs and references run to hundreds of MB,
  // and a stringstream would copy them twice more.
  const std::streamoff size = in.tellg();
  if (size < 0) throw usage_error("cannot read " + p.string());
  std::string data(size_t(size), '\0');
  in.seekg(0);
  if (!in.read(data.data(), size)) throw usage_error("cannot read " + p.string());
  // A file that grew since the size was taken (proc files report 0): read the rest too.
  std::ostringstream rest;
  rest << in.rdbuf();
  data += rest.str();
  return data;
}

void ensure_writable_dir(const fs::path& dir, const std::string& what, const std::string& flag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && fs::is_directory(dir) && ::access(dir.c_str(), W_OK) == 0) return;
  // The folder that is in the way: `dir` itself when it exists, else the nearest one above it.
  fs::path blocked = fs::absolute(dir, ec);
  while (!blocked.empty() && !fs::exists(blocked, ec) && blocked != blocked.parent_path())
    blocked = blocked.parent_path();
  const std::string where = blocked == fs::absolute(dir, ec)
                                ? std::string()
                                : fmt::format(" (it cannot be created: {} is not writable)", blocked.string());
  throw usage_error(fmt::format("{} {} is not writable{}: choose another with {} or fix its permissions", what,
                                dir.string(), where, flag));
}

std::string gpu_key(const std::string& gpu_name) {
  std::string k;
  for (char ch : gpu_name) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      k += char(std::tolower(static_cast<unsigned char>(ch)));
    else if (!k.empty() && k.back() != '-')
      k += '-';
  }
  while (!k.empty() && k.back() == '-') k.pop_back();
  return k.empty() ? "unknown-gpu" : k;
}

}  // namespace evo
