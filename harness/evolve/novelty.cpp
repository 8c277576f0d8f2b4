#include "evolve/novelty.h"

#include <cctype>

#include "compile/compiler.h"
#include "compile/cubin.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "store/json_fields.h"

namespace evo {

using nlohmann::json;

std::string normalized_source(const std::string& s) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) break;
      space = true;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      if (end == std::string::npos) break;
      i = end + 1;
      space = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += s[i];
  }
  return out;
}

std::string NoveltyFilter::normalized_hash(const std::string& sha, const std::string& source) const {
  auto it = by_sha_.find(sha);
  if (it != by_sha_.end()) return it->second;
  return by_sha_[sha] = sha256_hex(normalized_source(source));
}

std::string NoveltyFilter::key(const Candidate& c) const {
  // Records keep params as a JSON object (sorted by name): sort here too.
  std::map<std::string, long> sorted(c.params.begin(), c.params.end());
  std::string params;
  for (const auto& [k, v] : sorted) params += (params.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return normalized_hash(sha256_hex(c.variant->source), c.variant->source) + "|" +
         (params.empty() ? "(defaults)" : params) + "|" + c.task.name();
}

std::optional<std::string> NoveltyFilter::same_code(const std::string& code_sha256) const {
  auto it = code_.find(code_sha256);
  if (code_sha256.empty() || it == code_.end()) return std::nullopt;
  return it->second;
}

void NoveltyFilter::add_code(const std::string& code_sha256, const std::string& candidate_id) {
  if (!code_sha256.empty()) code_.emplace(code_sha256, candidate_id);
}

std::string NoveltyFilter::code_in_cache(const std::string& key) const {
  if (cache_dir_.empty()) return "";
  const auto cubin = Compiler::cache_entry_path(cache_dir_, key, ".cubin");  // empty for a key that is none of ours
  std::error_code ec;
  return !cubin.empty() && std::filesystem::is_regular_file(cubin, ec) ? code_identity(read_file(cubin)) : "";
}

void NoveltyFilter::add_records(const std::vector<Record>& records) {
  for (const auto& r : records) {
    if (r.task != task_ || r.kind != "run") continue;
    const json none = json::object(), &compile = r.compile ? r.compile->extra : none;
    const std::string code = string_or(compile, "code_sha256");
    add_code(code.empty() ? code_in_cache(r.compile ? r.compile->cache_key.value_or("") : "") : code, r.candidate_id);
    const std::string path = r.source_path.value_or("");
    std::string norm;
    if (auto it = by_sha_.find(r.source_sha256); it != by_sha_.end()) {
      norm = it->second;
    } else {
      if (path.empty() || !std::filesystem::exists(root_ / path)) continue;
      const std::string src = read_file(root_ / path);
      if (sha256_hex(src) != r.source_sha256) continue;  // the file changed since: that record is another source
      norm = normalized_hash(r.source_sha256, src);
    }
    std::string params;
    for (const auto& [k, v] : r.params) params += (params.empty() ? "" : " ") + k + "=" + std::to_string(v);
    keys_.insert(norm + "|" + (params.empty() ? "(defaults)" : params) + "|" + task_);
  }
}

}  // namespace evo
