// The worker's reference mode: evo's FP32 reference of each case, written for the parent.
#pragma once
#include "gpu/worker_device.h"
#include "gpu/worker_protocol.h"

namespace evo::worker_device {

// Each case's inputs filled as for the candidate, the reference kernel of `support` run over them,
// its FP32 output written atomically to the case's out_path (and the inputs beside it with
// dump_inputs); one phase and one case_done event per case.
void run_reference_cases(const WorkerJob& job, const Support& support, CUstream stream);

}  // namespace evo::worker_device
