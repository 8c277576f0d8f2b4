// evo's checks on the GPU, for the worker: keyed hashes of buffers, the FP32 reference of a
// whole output compared with it, and query rows drawn at run time recomputed and compared. Used
// by gpu/device_check_worker.cpp (gate cases too large for host copies), gpu/worker.cpp (the
// gate's input hashes) and gpu/timing_loop.cpp (every timed sample). Every check is evo's own
// kernel (support_kernels.cu), enqueued after the candidate's launch it checks.
#pragma once
#include <cuda.h>

#include <array>
#include <cstdint>

#include "core/task.h"
#include "gpu/device_check.h"
#include "gpu/worker_device.h"

namespace evo {

// Mirrors EvoCompareSums in support_kernels.cu.
struct DeviceCompareSums {
  unsigned long long unwritten, nonfinite, bad, first_fail;  // first_fail: logical index, ~0 if none
  double err2, ref2;
  unsigned max_abs_bits;       // float bits of the largest |out - ref|
  double signed_err, abs_ref;  // sums of (out - ref)·sign(ref) and |ref|
};

// What a comparison starts from: zero counts and sums, first_fail ~0 (none yet).
DeviceCompareSums empty_compare_sums();
// The sums as the worker reports them, over `n` compared elements.
DeviceCheckFacts facts_of(const DeviceCompareSums& s, uint64_t n);

// A device allocation of its own, freed when it goes.
struct Scratch {
  CUdeviceptr ptr = 0;
  explicit Scratch(size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

class DeviceChecker {
 public:
  // Draws its hash key from the OS: no kernel can aim a change at a collision.
  DeviceChecker(const worker_device::Support& support, const Task& task, CUstream stream);

  // The keyed hash of a buffer's bytes, its padding included (waits for it).
  uint64_t hash(const worker_device::GuardedBuffer& b) const;
  // The keyed hash of `bytes` bytes at `data` (waits for it).
  uint64_t hash(CUdeviceptr data, size_t bytes) const;
  std::array<uint64_t, 3> inputs(const worker_device::Problem& p) const;
  // O's bytes outside its elements, hashed: O's elements set to +0.0 (evo_fill, spread 0: only
  // the elements are written), then the keyed hash of O's whole buffer. Equal before the first
  // launch and after each one exactly when no byte outside O's elements changed; overwrites O's
  // elements, so it runs after whatever reads the output (waits).
  uint64_t outside_elements(const worker_device::Problem& p) const;
  // Whether a split kernel's tile counters (its workspace's first bytes, up to the partials) are
  // 0, as every launch must leave them (evo_launch.h): read back (a few KiB). True without a
  // workspace. Stream-ordered after the launch it checks (waits).
  // Hacker round 7: a launch count kept in a counter was state between calls no check read.
  bool counters_zero(const worker_device::Problem& p) const;
  // Adds the keyed hashes of Q, K and V (a key per tensor) into the 64-bit word at `sum`;
  // stream-ordered, no wait.
  void hash_inputs_async(const worker_device::Problem& p, CUdeviceptr sum) const;

  // evo's reference of the whole output into a fresh FP32 buffer, then the comparison with the
  // problem's O (waits for both).
  DeviceCheckFacts compare(const worker_device::Problem& p, double atol, double rtol) const;

  // `count` query rows drawn by `key` (row r: mix(key + r) mod rows; key 0: rows 0 .. count-1),
  // recomputed in FP32 and compared with `out` (the problem's O, or a copy of it in the same
  // layout), added into the sums at `sums`; stream-ordered, no wait.
  void check_rows_async(const worker_device::Problem& p, const worker_device::TensorDesc& out, double atol, double rtol,
                        long long count, uint64_t key, CUdeviceptr sums) const;
  // Every query row of the problem's O recomputed and compared, in one pass (waits): the full
  // check of a timed sample. The same arithmetic as compare(), without its FP32 copy of the output.
  // With `max_rows` > 0 and fewer rows than the problem has: that many rows drawn by `key`
  // (nonzero) instead (TimingConfig::full_check_rows); the facts count what was compared.
  DeviceCheckFacts check_all_rows(const worker_device::Problem& p, double atol, double rtol, long long max_rows = 0,
                                  uint64_t key = 0) const;

 private:
  const worker_device::Support& support_;
  Task task_;
  CUstream stream_;
  CUfunction hash_ = nullptr, compare_ = nullptr, rows_ = nullptr;
  uint64_t key_ = 0;
};

}  // namespace evo
