// The novelty filter of `evo evolve`, in two steps. Before any compile: a proposal whose
// normalized source (comments and whitespace dropped) and params were evaluated already for the
// task is dropped. After the (cached) compile, before any GPU time: a proposal whose code
// (compile/cubin.h code_identity: the cubin but for its debug info, launch geometry included)
// an evaluated candidate of the task ran is dropped, so an edited #ifndef default or a reordered
// front matter does not make a measured configuration new. Seeded from every record under
// results/ (records keep compile.code_sha256, so --resume keeps it), then grown as the run goes.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "store/typed_record.h"

namespace evo {

std::string normalized_source(const std::string& source);

class NoveltyFilter {
 public:
  // `cache_dir`: the compile cache, where the code of a record from before compile.code_sha256
  // is read from its cubin (compile.cache_key), when the entry is still there.
  NoveltyFilter(std::filesystem::path root, std::string task, std::filesystem::path cache_dir = {})
      : root_(std::move(root)), task_(std::move(task)), cache_dir_(std::move(cache_dir)) {}
  void add_records(const std::vector<Record>& records);
  bool seen(const Candidate& c) const { return keys_.count(key(c)) > 0; }
  void add(const Candidate& c) { keys_.insert(key(c)); }
  size_t size() const { return keys_.size(); }
  // The candidate that ran this code for the task, if one did.
  std::optional<std::string> same_code(const std::string& code_sha256) const;
  void add_code(const std::string& code_sha256, const std::string& candidate_id);

 private:
  std::string key(const Candidate& c) const;
  std::string normalized_hash(const std::string& sha, const std::string& source) const;
  std::string code_in_cache(const std::string& cache_key) const;
  std::filesystem::path root_;
  std::string task_;
  std::filesystem::path cache_dir_;
  std::set<std::string> keys_;
  std::map<std::string, std::string> code_;            // code_sha256 -> candidate id
  mutable std::map<std::string, std::string> by_sha_;  // source sha256 -> normalized hash
};

}  // namespace evo
