// Loading the package's kernels on a device and launching one call, by the rules evo's worker
// launches by (kernels/evo_host_launch.h, the ABI floor both compile); what is left here is the
// package's own plumbing: the device's context, the loaded modules, the workspace per stream.
#pragma once
#include <cuda.h>

#include <string>

#include "package.h"

namespace evo_attn {

// Loads every kernel of the package on `device` (once; later calls return the first outcome).
// An evo_attn_status: EVO_ATTN_UNSUPPORTED for a GPU the cubins are not for.
int load_device(const Package& p, int device, std::string& error);
// Launches the planned kernel for `call` on `stream`; an evo_attn_status, the error in `error`.
int launch(const Package& p, const evo_attn_call& call, const Plan& plan, CUstream stream, std::string& error);

}  // namespace evo_attn
