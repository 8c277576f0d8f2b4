// Where things live: the repository root (variants/, gates/, results/, populations/), the
// user cache dir, and the CUDA toolkit include dirs that NVRTC needs.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace evo {

namespace fs = std::filesystem;

// The repository root: $EVO_ROOT, else the nearest ancestor of the working directory that
// holds gates/gates.json, else the one above the executable. Throws a usage error if none.
fs::path repo_root();
// The default of --results-dir / --populations-dir: <repo>/<folder> of the repository evo finds
// (repo_root, as it finds variants/), so a command run from another directory reads and writes
// the same records; ./<folder> when evo runs outside any repository (commands print the path).
fs::path default_store_dir(const std::string& folder);
// $XDG_CACHE_HOME/evo or ~/.cache/evo, unless overridden.
fs::path default_cache_dir();
// The toolkit include dir (with cuda_fp16.h), from CUDA_HOME / CUDA_PATH, the loaded
// libnvrtc's toolkit, or /usr/local/cuda; empty when none is found.
std::optional<fs::path> cuda_include_dir();
// Path to the running evo executable (for spawning workers).
fs::path self_executable();
// The evo binary to run for child processes (__compile, __worker): $EVO_EXECUTABLE when set
// (test binaries link evo's code but are not evo), else the running executable.
fs::path evo_executable();

std::string read_file(const fs::path& p);  // throws usage_error naming the file

// Fails (usage error, exit 1) unless `dir` can be created and written. The message names the
// path that is in the way (`dir`, or the nearest existing folder above it that cannot be written)
// and `flag`, the option that moves it ("--cache-dir", "--results-dir", ...).
void ensure_writable_dir(const fs::path& dir, const std::string& what, const std::string& flag);

// The folder name of a GPU model under populations/: "NVIDIA H200" -> "nvidia-h200".
std::string gpu_key(const std::string& gpu_name);

}  // namespace evo
