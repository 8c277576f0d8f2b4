// What changes when a case is large: where it is checked, and how long the watchdog waits.
// A tensor above 2^31 elements (gates.json "huge") is 4+ GB per buffer; hashing it on the host
// and copying its output and FP32 reference through files would take longer than the
// candidate's launches, so such cases are checked on the GPU (gpu/device_check_worker.h). The
// watchdog's limit for a gate case grows with its bytes and FLOPs, so a correct kernel on a big
// case is never a `timeout`, and a hang is still killed after a bounded time.
#pragma once
#include <vector>

#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

// Gate cases whose largest buffer holds at least limits.device_check_elements elements are
// checked on the GPU, with the tolerance of the task's dtype and the case's inputs. Such a shape
// runs once (its first seed and input distribution): a case costs seconds, and what it checks
// is addressing past 2^31 elements; the sampled cases vary scales and distributions. Sampled
// cases of both tiers are checked on the GPU too when gates.json `sampled.device_check` is on:
// their references are computed in the worker (milliseconds) instead of hashed, copied and
// compared on the host (up to a second for a case at the element bound).
void mark_device_checks(const GatesConfig& gates, const Task& task, std::vector<CaseSpec>& cases);

// Device memory a case checked on the GPU holds at its peak: its four buffers and the FP32
// reference of O.
double device_check_bytes(const CaseSpec& c, const Task& task);

// Seconds a gate case may go without progress: limits.gate_case_s, plus its bytes at the floor
// rate of the path they take (host copies and SHA-256, or device passes) and three times its
// FLOPs (two candidate launches, one reference) at limits.watchdog_flops_per_s.
double gate_case_limit_s(const CaseSpec& c, const Task& task, const Limits& limits);

}  // namespace evo
