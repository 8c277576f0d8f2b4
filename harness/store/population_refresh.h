// A GPU's populations derived again from a results folder's records (store/record_follower.h),
// as Session::refresh_populations derives them from read_records, but reading only the records
// appended since the last refresh: what `evo evolve` does after each evaluation.
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
