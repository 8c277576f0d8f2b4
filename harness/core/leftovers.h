// What a killed evo leaves behind, removed by the next one. Scratch files and folders carry their
// owner's process id in their names (a run's <tmp>/evo-<pid>-<run id>/, a generator's
// <tmp>/evo-generator-<pid>-<n>.*, an atomic write's <file>.tmp.<pid>.<n>); one whose owner is
// gone is garbage. Only this user's are touched, and never one whose process still runs.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace evo {

// True when no process `pid` exists (kill(pid, 0) says ESRCH).
bool process_gone(pid_t pid);

// The pid in `name` right after `prefix` and before `sep` ("evo-generator-" "123-4.in" '-' ->
// 123), or 0 when the name does not have that form.
pid_t pid_after(const std::string& name, const std::string& prefix, char sep);

// Removes <temp_dir>/evo-<pid>-* and evo-generator-<pid>-* of processes that are gone; returns
// how many it removed. Errors are ignored: a leftover that cannot go now goes next time.
size_t remove_orphaned_work_files(const std::filesystem::path& temp_dir);

// Removes <dir>/*.tmp.<pid>.<n> (write_file_atomic's temporaries) of processes that are gone.
size_t remove_orphaned_temp_files(const std::filesystem::path& dir);

}  // namespace evo
