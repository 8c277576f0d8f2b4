// The novelty filter of `evo evolve`: a proposal whose normalized source (comments and
// whitespace dropped) and params were evaluated already for the task is dropped before any
// compile. Seeded from every record under results/, then grown as the run goes.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/candidate.h"

namespace evo {

std::string normalized_source(const std::string& source);

class NoveltyFilter {
 public:
  NoveltyFilter(std::filesystem::path root, std::string task) : root_(std::move(root)), task_(std::move(task)) {}
  void add_records(const std::vector<nlohmann::json>& records);
  bool seen(const Candidate& c) const { return keys_.count(key(c)) > 0; }
  void add(const Candidate& c) { keys_.insert(key(c)); }
  size_t size() const { return keys_.size(); }

 private:
  std::string key(const Candidate& c) const;
  std::string normalized_hash(const std::string& sha, const std::string& source) const;
  std::filesystem::path root_;
  std::string task_;
  std::set<std::string> keys_;
  mutable std::map<std::string, std::string> by_sha_;  // source sha256 -> normalized hash
};

}  // namespace evo
