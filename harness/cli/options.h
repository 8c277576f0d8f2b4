// Flag sets that several subcommands share, declared once so their names, defaults and help
// agree. A command's options struct derives from the sets it takes (struct RunOptions :
// StoreDirs, CacheDir, DeviceChoice), so its code keeps reading o.results_dir, o.device, ...
#pragma once
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

#include "core/paths.h"

namespace evo {

// Range checks for numeric flags, run on the text before it is converted: a typo (`--budget -1`,
// `--budget-gpu-s nan`) is a usage error naming the flag and the range, never "no limit". NaN and
// infinities are refused by every one of them.
CLI::Validator at_least(double lo);  // a finite number >= lo
CLI::Validator above(double lo);     // a finite number > lo

// --results-dir, --populations-dir: where records are read/appended and populations written.
struct StoreDirs {
  std::string results_dir = default_store_dir("results").string();  // <repo>/results
  std::string populations_dir = default_store_dir("populations").string();
};
void add_store_dirs(CLI::App* cmd, StoreDirs& dirs, const std::string& results_help = "where records are appended");

// --cache-dir: the compile and reference cache.
struct CacheDir {
  std::string cache_dir;  // empty: default_cache_dir()
  std::filesystem::path cache_path() const;
};
void add_cache_dir(CLI::App* cmd, CacheDir& cache);

// --device N, or --devices 0,1|all (one worker per GPU from one queue).
struct DeviceChoice {
  int device = 0;
  std::string devices;
};
void add_device_choice(CLI::App* cmd, DeviceChoice& choice);

// --shard i/N: this process's part of a list (default inside a Slurm job array: its task).
void add_shard_option(CLI::App* cmd, std::string& shard, const std::string& what);

}  // namespace evo
