// `--shard i/N`: a deterministic partition of a command's candidate list, for Slurm job arrays.
// Shard i takes the candidates at positions p with p mod N == i of the list every shard builds
// identically (same repository, flags and --rng-seed), so the N shards together evaluate each
// candidate exactly once and their sizes differ by at most one.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace evo {

struct Shard {
  unsigned index = 0, count = 1;  // 0-based index of `count` shards
  bool active() const { return count > 1; }
  bool owns(size_t position) const { return position % count == index; }
  std::string text() const;  // "2/4"
  std::string source;        // "--shard" or "SLURM_ARRAY_TASK_ID", for the log line
};

// "i/N" with 0 <= i < N; anything else is a usage error (exit 1) that says what to write.
Shard parse_shard(const std::string& spec);
// The same for another option of the i/N form (`--island`): its messages name `flag`.
Shard parse_part(const std::string& flag, const std::string& spec);

// The shard to run: --shard when given; else, inside a Slurm job array, task
// SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT; else the whole list.
// Inconsistent Slurm variables are an environment error (exit 2).
using EnvLookup = std::function<const char*(const char*)>;
Shard resolve_shard(const std::string& option, const EnvLookup& env);
Shard resolve_shard(const std::string& option);  // from the process environment
// resolve_shard for another option of the i/N form (`--island`).
Shard resolve_part(const std::string& flag, const std::string& option, const EnvLookup& env);

template <typename T>
std::vector<T> take_shard(const std::vector<T>& all, const Shard& shard) {
  std::vector<T> out;
  for (size_t p = 0; p < all.size(); ++p)
    if (shard.owns(p)) out.push_back(all[p]);
  return out;
}

}  // namespace evo
