#include "gpu/device_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/reference_launch.h"

namespace evo {

using namespace worker_device;

DeviceCompareSums empty_compare_sums() {
  DeviceCompareSums s{};
  s.first_fail = ~0ull;
  return s;
}

DeviceCheckFacts facts_of(const DeviceCompareSums& s, uint64_t n) {
  DeviceCheckFacts f;
  f.n = n;
  f.unwritten = s.unwritten;
  f.nonfinite = s.nonfinite;
  f.bad = s.bad;
  f.first_fail = s.first_fail == ~0ull ? -1 : int64_t(s.first_fail);
  f.err2 = s.err2;
  f.ref2 = s.ref2;
  f.signed_err = s.signed_err;
  f.abs_ref = s.abs_ref;
  float max_abs = 0;
  std::memcpy(&max_abs, &s.max_abs_bits, sizeof(max_abs));
  f.max_abs = max_abs;
  return f;
}

Scratch::Scratch(size_t bytes) { check(cu().cuMemAlloc(&ptr, bytes), "cuMemAlloc(device check)", "runtime"); }
Scratch::~Scratch() { cu().cuMemFree(ptr); }

DeviceChecker::DeviceChecker(const Support& support, const Task& task, CUstream stream)
    : support_(support), task_(task), stream_(stream) {
  check(cu().cuModuleGetFunction(&hash_, support.module, "evo_hash_bytes"), "evo_hash_bytes", "runtime");
  // The output's element type: fp8 tasks write bf16.
  const std::string cmp = std::string("evo_compare_") + (task.dtype == DType::fp16 ? "fp16" : "bf16");
  check(cu().cuModuleGetFunction(&compare_, support.module, cmp.c_str()), "evo_compare", "runtime");
  const std::string rows = fmt::format("evo_check_rows_{}_d{}", task.dtype_name(), task.head_dim);
  check(cu().cuModuleGetFunction(&rows_, support.module, rows.c_str()), "evo_check_rows", "runtime");
  std::random_device rd;
  key_ = (uint64_t(rd()) << 32) ^ rd();
}

uint64_t DeviceChecker::hash(const GuardedBuffer& b) const { return hash(b.data(), b.bytes); }

uint64_t DeviceChecker::hash(CUdeviceptr data, size_t n) const {
  Scratch sum(sizeof(uint64_t));
  // Stream-ordered: the worker's stream does not wait for the legacy stream's memsets.
  check(cu().cuMemsetD8Async(sum.ptr, 0, sizeof(uint64_t), stream_), "hash init", "runtime");
  unsigned long long bytes = n, key = key_;
  void* args[] = {&data, &bytes, &key, &sum.ptr};
  check(cu().cuLaunchKernel(hash_, 2048, 1, 1, 256, 1, 1, 0, stream_, args, nullptr), "hash launch", "runtime");
  check(cu().cuStreamSynchronize(stream_), "hash kernel", "runtime");
  uint64_t h = 0;
  check(cu().cuMemcpyDtoH(&h, sum.ptr, sizeof(h)), "hash readback", "runtime");
  return h;
}

std::array<uint64_t, 3> DeviceChecker::inputs(const Problem& p) const { return {hash(p.q), hash(p.k), hash(p.v)}; }

uint64_t DeviceChecker::outside_elements(const Problem& p) const {
  TensorDesc d = p.dout;
  unsigned seed = 0, tensor = 3;
  FillParams zero;
  zero.stddev = 0;  // mean 0 + 0 * normal: +0.0 in every element, nothing else written
  unsigned long long nonce = 0;
  void* args[] = {&d, &seed, &tensor, &zero, &nonce};
  check(cu().cuLaunchKernel(support_.fill_out, 1024, 1, 1, 256, 1, 1, 0, stream_, args, nullptr), "gap probe fill",
        "runtime");
  return hash(p.o);  // stream-ordered after the fill
}

bool DeviceChecker::counters_zero(const Problem& p) const {
  const size_t n = p.workspace.bytes > 0 ? p.workspace_counters : 0;
  if (n == 0) return true;
  std::vector<unsigned char> counters(n);  // a few KiB: 4 bytes per tile (evo_workspace_layout)
  check(cu().cuStreamSynchronize(stream_), "counter check", "runtime");
  check(cu().cuMemcpyDtoH(counters.data(), p.workspace.data(), n), "counter readback", "runtime");
  return std::all_of(counters.begin(), counters.end(), [](unsigned char b) { return b == 0; });
}

void DeviceChecker::hash_inputs_async(const Problem& p, CUdeviceptr sum) const {
  const GuardedBuffer* bufs[3] = {&p.q, &p.k, &p.v};
  for (int t = 0; t < 3; ++t) {
    CUdeviceptr data = bufs[t]->data();
    unsigned long long bytes = bufs[t]->bytes;
    // A key per tensor: the same word moved from Q to K at the same index changes the sum.
    unsigned long long key = key_ + uint64_t(t + 1) * 0x9E3779B97F4A7C15ull;
    void* args[] = {&data, &bytes, &key, &sum};
    check(cu().cuLaunchKernel(hash_, 2048, 1, 1, 256, 1, 1, 0, stream_, args, nullptr), "hash launch", "runtime");
  }
}

DeviceCheckFacts DeviceChecker::compare(const Problem& p, double atol_d, double rtol_d) const {
  const Shape& sh = p.shape;
  const uint64_t n = uint64_t(sh.elements(sh.heads_q, sh.seq_q));
  Scratch ref(n * sizeof(float)), sums(sizeof(DeviceCompareSums));
  size_t free_bytes = 0, total_bytes = 0;
  check(cu().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo", "runtime");
  TensorDesc dout = p.dout;
  const float descale[3] = {p.descale[0], p.descale[1], p.descale[2]};  // 1 unless fp8 (gpu/fp8_inputs.h)
  launch_reference(support_, p.dq, p.dk, p.dv, ref.ptr, p.scale, task_.causal, descale, stream_);
  const DeviceCompareSums init = empty_compare_sums();
  check(cu().cuMemcpyHtoDAsync(sums.ptr, &init, sizeof(init), stream_), "compare init", "runtime");
  float atol = float(atol_d), rtol = float(rtol_d);
  void* cmp_args[] = {&dout, &ref.ptr, &atol, &rtol, &sums.ptr};
  check(cu().cuLaunchKernel(compare_, 4096, 1, 1, 256, 1, 1, 0, stream_, cmp_args, nullptr), "compare launch",
        "runtime");
  check(cu().cuStreamSynchronize(stream_), "reference and compare kernels", "runtime");
  DeviceCompareSums r{};
  check(cu().cuMemcpyDtoH(&r, sums.ptr, sizeof(r)), "compare readback", "runtime");
  DeviceCheckFacts f = facts_of(r, n);
  f.device_bytes = total_bytes - free_bytes;
  return f;
}

void DeviceChecker::check_rows_async(const Problem& p, const TensorDesc& out, double atol_d, double rtol_d,
                                     long long count, uint64_t key_in, CUdeviceptr sums) const {
  float scale = p.scale;
  int causal = task_.causal ? 1 : 0;
  TensorDesc dq = p.dq, dk = p.dk, dv = p.dv, dout = out;
  float descale[3] = {p.descale[0], p.descale[1], p.descale[2]};
  float atol = float(atol_d), rtol = float(rtol_d);
  unsigned long long key = key_in;
  void* args[] = {&dq,         &dk,         &dv,   &dout, &scale, &causal, &descale[0],
                  &descale[1], &descale[2], &atol, &rtol, &key,   &sums};
  check(cu().cuLaunchKernel(rows_, unsigned(count), 1, 1, 1024, 1, 1, 0, stream_, args, nullptr), "row check launch",
        "runtime");
}

DeviceCheckFacts DeviceChecker::check_all_rows(const Problem& p, double atol, double rtol, long long max_rows,
                                               uint64_t key) const {
  const Shape& sh = p.shape;
  const long long all = (long long)sh.batch * sh.heads_q * sh.seq_q;
  const bool capped = max_rows > 0 && max_rows < all;
  const long long rows = capped ? max_rows : all;
  Scratch sums(sizeof(DeviceCompareSums));
  const DeviceCompareSums init = empty_compare_sums();
  check(cu().cuMemcpyHtoDAsync(sums.ptr, &init, sizeof(init), stream_), "full check init", "runtime");
  check_rows_async(p, p.dout, atol, rtol, rows, capped ? (key | 1) : 0, sums.ptr);
  check(cu().cuStreamSynchronize(stream_), "full check", "runtime");
  DeviceCompareSums r{};
  check(cu().cuMemcpyDtoH(&r, sums.ptr, sizeof(r)), "full check readback", "runtime");
  return facts_of(r, uint64_t(rows) * uint64_t(sh.head_dim));
}

}  // namespace evo
