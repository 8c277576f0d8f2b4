#include "cli/options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "core/paths.h"

namespace evo {

namespace {

CLI::Validator number_check(double lo, bool inclusive) {
  const std::string range = fmt::format("a finite number {} {}", inclusive ? ">=" : ">", lo);
  return CLI::Validator(
      [lo, inclusive, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size())
          return fmt::format("'{}' is not a number: give {}", text, range);
        if (!std::isfinite(x) || (inclusive ? x < lo : x <= lo))
          return fmt::format("{} is out of range: give {}", text, range);
        return "";
      },
      inclusive ? fmt::format("NUMBER>={}", lo) : fmt::format("NUMBER>{}", lo));
}

}  // namespace

CLI::Validator at_least(double lo) { return number_check(lo, true); }
CLI::Validator above(double lo) { return number_check(lo, false); }

void add_store_dirs(CLI::App* cmd, StoreDirs& dirs, const std::string& results_help) {
  cmd->add_option("--results-dir", dirs.results_dir, results_help)->capture_default_str();
  cmd->add_option("--populations-dir", dirs.populations_dir, "where populations are written")->capture_default_str();
}

std::filesystem::path CacheDir::cache_path() const {
  return cache_dir.empty() ? default_cache_dir() : std::filesystem::path(cache_dir);
}

void add_cache_dir(CLI::App* cmd, CacheDir& cache) {
  cmd->add_option("--cache-dir", cache.cache_dir, "compile and reference cache (default: $XDG_CACHE_HOME/evo)");
}

void add_device_choice(CLI::App* cmd, DeviceChoice& choice) {
  auto* device =
      cmd->add_option("--device", choice.device, "CUDA device index")->check(at_least(0))->capture_default_str();
  cmd->add_option("--devices", choice.devices,
                  "GPUs to use at once, e.g. 0,1 or all: one worker per GPU from one queue (one GPU model only)")
      ->excludes(device);
}

void add_shard_option(CLI::App* cmd, std::string& shard, const std::string& what) {
  cmd->add_option("--shard", shard,
                  what +
                      " shard i/N (0-based; default inside a Slurm job array: SLURM_ARRAY_TASK_ID of "
                      "SLURM_ARRAY_TASK_COUNT)");
}

}  // namespace evo
