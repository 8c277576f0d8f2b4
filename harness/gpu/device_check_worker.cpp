#include "gpu/device_check_worker.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <random>

#include "gpu/device_check.h"

namespace evo {

using namespace worker_device;
using nlohmann::json;

namespace {

// Mirrors EvoCompareSums in support_kernels.cu.
struct DeviceCompareSums {
  unsigned long long unwritten, nonfinite, bad, first_fail;
  double err2, ref2;
  unsigned max_abs_bits;
};

// A small device allocation of its own, freed when it goes.
struct Scratch {
  CUdeviceptr ptr = 0;
  explicit Scratch(size_t bytes) { check(cu().cuMemAlloc(&ptr, bytes), "cuMemAlloc(device check)", "runtime"); }
  ~Scratch() { cu().cuMemFree(ptr); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

class DeviceChecker {
 public:
  DeviceChecker(const Support& s, const Task& task, CUstream stream) : stream_(stream) {
    check(cu().cuModuleGetFunction(&hash_, s.module, "evo_hash_bytes"), "evo_hash_bytes", "runtime");
    // The output's element type: fp8 tasks write bf16.
    const std::string cmp = std::string("evo_compare_") + (task.dtype == DType::fp16 ? "fp16" : "bf16");
    check(cu().cuModuleGetFunction(&compare_, s.module, cmp.c_str()), "evo_compare", "runtime");
    std::random_device rd;
    key_ = (uint64_t(rd()) << 32) ^ rd();
  }

  // The keyed hash of a buffer's bytes, its padding included.
  uint64_t hash(const GuardedBuffer& b) const {
    Scratch sum(sizeof(uint64_t));
    // Stream-ordered: the worker's stream does not wait for the legacy stream's memsets.
    check(cu().cuMemsetD8Async(sum.ptr, 0, sizeof(uint64_t), stream_), "hash init", "runtime");
    CUdeviceptr data = b.data();
    unsigned long long bytes = b.bytes, key = key_;
    void* args[] = {&data, &bytes, &key, &sum.ptr};
    check(cu().cuLaunchKernel(hash_, 2048, 1, 1, 256, 1, 1, 0, stream_, args, nullptr), "hash launch", "runtime");
    check(cu().cuStreamSynchronize(stream_), "hash kernel", "runtime");
    uint64_t h = 0;
    check(cu().cuMemcpyDtoH(&h, sum.ptr, sizeof(h)), "hash readback", "runtime");
    return h;
  }

  std::array<uint64_t, 3> inputs(const Problem& p) const { return {hash(p.q), hash(p.k), hash(p.v)}; }

  // Reference into a fresh FP32 buffer, then the comparison with the candidate's output.
  DeviceCheckFacts compare(const Problem& p, const Support& s, const CaseSpec& c, bool causal) const {
    DeviceCheckFacts f;
    const Shape& sh = p.shape;
    f.n = uint64_t(sh.elements(sh.heads_q, sh.seq_q));
    Scratch ref(f.n * sizeof(float)), sums(sizeof(DeviceCompareSums));
    size_t free_bytes = 0, total_bytes = 0;
    check(cu().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo", "runtime");
    f.device_bytes = total_bytes - free_bytes;
    float scale = p.scale;
    int causal_flag = causal ? 1 : 0;
    TensorDesc dq = p.dq, dk = p.dk, dv = p.dv, dout = p.dout;
    float descale[3] = {p.descale[0], p.descale[1], p.descale[2]};  // 1 unless fp8 (gpu/fp8_inputs.h)
    void* ref_args[] = {&dq, &dk, &dv, &ref.ptr, &scale, &causal_flag, &descale[0], &descale[1], &descale[2]};
    const long long rows = (long long)sh.batch * sh.heads_q * sh.seq_q;
    check(cu().cuLaunchKernel(s.reference, unsigned((rows * 32 + 255) / 256), 1, 1, 256, 1, 1, 0, stream_, ref_args,
                              nullptr),
          "reference launch", "runtime");
    check(cu().cuMemsetD8Async(sums.ptr, 0, sizeof(DeviceCompareSums), stream_), "compare init", "runtime");
    check(cu().cuMemsetD8Async(sums.ptr + offsetof(DeviceCompareSums, first_fail), 0xFF, sizeof(uint64_t), stream_),
          "compare init", "runtime");  // first_fail = ~0: none yet
    float atol = float(c.device_check.atol), rtol = float(c.device_check.rtol);
    void* cmp_args[] = {&dout, &ref.ptr, &atol, &rtol, &sums.ptr};
    check(cu().cuLaunchKernel(compare_, 4096, 1, 1, 256, 1, 1, 0, stream_, cmp_args, nullptr), "compare launch",
          "runtime");
    check(cu().cuStreamSynchronize(stream_), "reference and compare kernels", "runtime");
    DeviceCompareSums r{};
    check(cu().cuMemcpyDtoH(&r, sums.ptr, sizeof(r)), "compare readback", "runtime");
    f.unwritten = r.unwritten;
    f.nonfinite = r.nonfinite;
    f.bad = r.bad;
    f.first_fail = r.first_fail == ~0ull ? -1 : int64_t(r.first_fail);
    f.err2 = r.err2;
    f.ref2 = r.ref2;
    float max_abs = 0;
    std::memcpy(&max_abs, &r.max_abs_bits, sizeof(max_abs));
    f.max_abs = max_abs;
    return f;
  }

 private:
  CUstream stream_;
  CUfunction hash_ = nullptr, compare_ = nullptr;
  uint64_t key_ = 0;
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

WorkerEvent check_on_device(Problem& p, const CaseSpec& c, const Support& support, const Task& task, CUstream stream,
                            const std::function<void()>& launch_candidate) {
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceChecker checker(support, task, stream);
  const std::array<uint64_t, 3> before = checker.inputs(p);
  launch_candidate();
  const uint64_t first = checker.hash(p.o);
  launch_candidate();  // poisoned again: a stale output cannot pass
  const uint64_t second = checker.hash(p.o);
  // Nothing of the candidate may still run when the inputs are re-hashed and the reference
  // computed from them (a grid on another stream, a child grid): wait for the whole context.
  check(cu().cuCtxSynchronize(), "evo_attn_fwd", "crash");
  const bool inputs_intact = checker.inputs(p) == before;
  const bool guards_intact = p.q.guards_intact() && p.k.guards_intact() && p.v.guards_intact() && p.o.guards_intact();
  const auto t_ref = std::chrono::steady_clock::now();
  DeviceCheckFacts facts = checker.compare(p, support, c, task.causal);
  facts.reference_s = since(t_ref);
  facts.seconds = since(t0);
  WorkerEvent done = case_done_event(c.id, "", first == second, inputs_intact, guards_intact);  // no output file
  done.device_check = facts;
  return done;
}

}  // namespace evo
