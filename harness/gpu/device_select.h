// `--devices 0,1,…|all`: which GPUs of this host a command uses. One population holds one GPU
// model (fitness from an H100 and an H200 is not comparable), so a selection that mixes models
// is refused before any work, as is an index this host does not have.
#pragma once
#include <string>
#include <vector>

#include "gpu/device_query.h"

namespace evo {

// The indices named by a spec ("all" -> empty, meaning every device). Throws a usage error
// (exit 1) on anything but "all" or comma-separated non-negative integers without repeats.
std::vector<int> parse_device_spec(const std::string& spec);

// The GPUs of `present` (every device of the host, in index order) that `spec` names. Throws a
// usage error (exit 1) naming what to fix for an index the host lacks or for mixed models, and
// an environment error (exit 2) when the host has no GPU at all.
std::vector<GpuInfo> select_devices(const std::string& spec, const std::vector<GpuInfo>& present);

// select_devices() over this host's GPUs, queried through the driver.
std::vector<GpuInfo> query_devices(const std::string& spec);

}  // namespace evo
