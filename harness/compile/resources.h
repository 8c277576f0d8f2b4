// The resource gate: runs on the ptxas report and the exported launch geometry alone, so it
// needs no GPU. Any spill rejects; so does a ptxas warning that wgmma was serialized.
#pragma once
#include <optional>
#include <string>

#include "compile/cubin.h"
#include "compile/ptxas_report.h"
#include "policy/config.h"

namespace evo {

// nullopt when within the caps; otherwise the first violated cap, in one line.
std::optional<std::string> check_resources(const PtxasResources& r, const LaunchGeometry& g, const ResourceCaps& caps);

}  // namespace evo
