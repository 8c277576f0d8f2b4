// The --out folder of `evo export`. An earlier export's manifest lists every file it wrote
// ("files"); a new export removes exactly those and writes its own. Anything else in the folder
// (a user's src/my_op.cpp, notes, a build/ tree) is the user's: it stays, and a new file that
// would land on one of them stops the export before anything is touched.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace evo {

// The files (relative, '/'-separated) the export in `out` wrote: none for a missing or empty
// folder. Throws a usage error (exit 1) for a folder that is not an evo export, or an export whose
// manifest lists no files (evo before the list; it cannot tell its files from the user's).
std::vector<std::string> previous_export_files(const std::filesystem::path& out);

// Writes `files` (relative path -> bytes) into `out`: checks first that none would replace a file
// the previous export did not write, then removes the previous export's files (and the folders
// that leaves empty), then writes each file atomically.
void replace_export(const std::filesystem::path& out, const std::map<std::string, std::string>& files);

}  // namespace evo
