// The worker's side of a case checked on the GPU (CaseSpec::device_check): a tensor above 2^31
// elements is 4+ GB per buffer, and copying it to the host to hash and compare would cost more
// than the candidate's launches and more than a gate case's watchdog allows. Everything stays
// on the device:
//  - the inputs are hashed by evo_hash_bytes with a key drawn now, before the first launch and
//    again after the candidate's last launch has completed (cuCtxSynchronize);
//  - the candidate runs twice, over two different finite pre-fills of the output
//    (gpu/launch_draws.h); the two outputs' hashes decide determinism, so an element it leaves
//    alone (holding a different pre-fill each time) fails it, and the comparison too;
//  - a two-stream case (CaseSpec::two_streams) does this for two problems at once, their
//    launches in flight together on two streams: both outputs hashed, both compared;
//  - only then, from inputs whose hash was just re-checked and into buffers allocated after
//    the candidate's last launch, evo's reference kernel computes the FP32 output and
//    evo_compare_* reduces the comparison to counts and sums (gpu/device_check.h).
// No candidate code runs after the re-hash, so nothing it does can reach the reference.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/task.h"
#include "gpu/device_checker.h"
#include "gpu/gate_side_effects.h"
#include "gpu/worker_device.h"
#include "gpu/worker_events.h"

namespace evo {

// The case_done event of one device-checked gate case over `problems` (one, or two for a
// two-stream case; their facts are summed, the first failing element is the first problem's if
// it has one). `launch_candidate` pre-fills every output for a launch of the given kind,
// launches the candidate once on each problem and waits for them.
WorkerEvent check_on_device(const std::vector<worker_device::Problem*>& problems, const CaseSpec& c,
                            const worker_device::Support& support, const Task& task, CUstream stream,
                            const std::function<void(LaunchKind)>& launch_candidate);

// What GateSideEffects reads of one problem, through `checker`'s keyed hashes (each waits for the
// launch before it on the checker's stream); both must outlive the probes.
ProblemProbes side_effect_probes(const DeviceChecker& checker, const worker_device::Problem& p);

}  // namespace evo
