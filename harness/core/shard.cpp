#include "core/shard.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/errors.h"

namespace evo {

namespace {
// A non-negative decimal that fits comfortably, or -1.
long parse_count(const std::string& s) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(s);
}
}  // namespace

std::string Shard::text() const { return fmt::format("{}/{}", index, count); }

Shard parse_shard(const std::string& spec) { return parse_part("--shard", spec); }

Shard parse_part(const std::string& flag, const std::string& spec) {
  const size_t slash = spec.find('/');
  const long i = slash == std::string::npos ? -1 : parse_count(spec.substr(0, slash));
  const long n = slash == std::string::npos ? -1 : parse_count(spec.substr(slash + 1));
  if (i < 0 || n < 1)
    throw usage_error(
        fmt::format("{0} {1}: write i/N, {2} i (0-based) of N, e.g. {0} 0/4", flag, spec, flag.substr(2)));
  if (i >= n)
    throw usage_error(
        fmt::format("{} {}: the index must be below the count (0-based: 0/{} to {}/{})", flag, spec, n, n - 1, n));
  return Shard{unsigned(i), unsigned(n), flag};
}

Shard resolve_shard(const std::string& option, const EnvLookup& env) { return resolve_part("--shard", option, env); }

Shard resolve_part(const std::string& flag, const std::string& option, const EnvLookup& env) {
  if (!option.empty()) return parse_part(flag, option);
  const char* id = env("SLURM_ARRAY_TASK_ID");
  const char* count = env("SLURM_ARRAY_TASK_COUNT");
  if (!id || !count) return Shard{};
  const char* min = env("SLURM_ARRAY_TASK_MIN");
  const long i = parse_count(id), n = parse_count(count), lo = min ? parse_count(min) : 0;
  if (i < 0 || n < 1 || lo < 0 || i - lo < 0 || i - lo >= n)
    throw environment_error(fmt::format(
        "SLURM_ARRAY_TASK_ID={} SLURM_ARRAY_TASK_MIN={} SLURM_ARRAY_TASK_COUNT={} do not name one task of a contiguous "
        "array (use --array=0-{{N-1}} without a step, or pass {} i/N)",
        id, min ? min : "(unset)", count, flag));
  return Shard{unsigned(i - lo), unsigned(n), "SLURM_ARRAY_TASK_ID"};
}

Shard resolve_shard(const std::string& option) {
  return resolve_shard(option, [](const char* name) { return std::getenv(name); });
}

}  // namespace evo
