// A GPU's populations derived again from a results folder's records as a follower holds them
// (store/record_follower.h): the files derive_populations(read_records(dir)) gives, byte for byte,
// but reading only the records appended since the follower's last look. Session::refresh_populations
// (run/session.h) calls it after each evaluation of evo run, eval, evolve and population
// remeasure, with the one follower of the folder its process keeps.
#pragma once
#include <filesystem>
#include <string>

#include "store/record_follower.h"

namespace evo {

// Under the results folder's .lock (store/records.h lock_results): refreshes `records`, derives
// every population and writes those of `gpu` under `populations_dir`. One caller at a time per
// follower.
void refresh_populations(RecordFollower& records, const std::filesystem::path& populations_dir, const std::string& gpu);

}  // namespace evo
