#include "export/export_folder.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/errors.h"
#include "core/paths.h"
#include "export/package_writer.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A listed path must stay inside the folder: relative, no "..", no empty or "." parts.
bool inside(const std::string& rel) {
  const fs::path p(rel);
  if (rel.empty() || p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

// Removes the folders between `file` and `out` that removing it left empty, deepest first.
void remove_empty_parents(const fs::path& out, fs::path dir) {
  std::error_code ec;
  while (dir != out && dir.string().size() > out.string().size() && fs::is_empty(dir, ec) && !ec) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

}  // namespace

std::vector<std::string> previous_export_files(const fs::path& out) {
  if (fs::exists(out) && !fs::is_directory(out)) throw usage_error(fmt::format("--out {}: not a folder", out.string()));
  if (!fs::is_directory(out) || fs::is_empty(out)) return {};
  const fs::path manifest = out / "manifest.json";
  const json m = fs::is_regular_file(manifest) ? json::parse(read_file(manifest), nullptr, false) : json();
  if (!m.is_object() || m.value("format", "") != kExportFormat)
    throw usage_error(fmt::format("--out {}: the folder is not empty and holds no earlier export; choose an empty one",
                                  out.string()));
  if (!m.contains("files") || !m["files"].is_array())
    throw usage_error(fmt::format(
        "--out {}: the earlier export's manifest lists no files (an older evo), so its files cannot be told from "
        "yours; delete the folder or choose an empty one",
        out.string()));
  std::vector<std::string> files;
  for (const auto& f : m["files"]) {
    if (!f.is_string() || !inside(f.get<std::string>()))
      throw usage_error(
          fmt::format("{}: \"files\" entry {} is not a path inside the folder; delete the folder or "
                      "choose an empty one",
                      manifest.string(), f.dump()));
    files.push_back(f.get<std::string>());
  }
  return files;
}

void replace_export(const fs::path& out, const std::map<std::string, std::string>& files) {
  const std::vector<std::string> previous = previous_export_files(out);
  const std::set<std::string> ours(previous.begin(), previous.end());
  for (const auto& [rel, data] : files)
    if (!ours.count(rel) && fs::exists(out / rel))
      throw usage_error(fmt::format(
          "--out {}: {} is not from the earlier export and the package would replace it; move it away or choose "
          "another folder",
          out.string(), rel));
  ensure_writable_dir(out, "package folder", "--out");
  for (const auto& rel : previous) {
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(out / rel, ec))) fs::remove(out / rel, ec);
    remove_empty_parents(out, (out / rel).parent_path());
  }
  for (const auto& [rel, data] : files) {
    fs::create_directories((out / rel).parent_path());
    write_file_atomic(out / rel, data);
  }
}

}  // namespace evo
