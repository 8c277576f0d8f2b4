// Where the host time of one evo_attn_forward() call goes (issue 30 item 5), in C++ so no
// Python or ctypes cost is in the figures. op_overhead.py measured the C API at 6.1-6.9 us a call
// through ctypes, plan included; this splits the C side into the driver calls it makes:
//   cuCtxGetCurrent           the context check before a launch
//   cuStreamGetCaptureInfo    the capture query (split kernels only)
//   cuTensorMapEncodeTiled    one TMA map (a TMA kernel encodes 1-4 a call)
//   cuMemsetD8Async 1 KiB     the split counters' clear, where one is needed
//   cuLaunchKernel            an empty kernel with an EvoAttnParams-sized parameter: the launch floor
//   cuLaunchKernelEx cluster2 the same with a cluster of two, as stage-8 kernels launch
//   evo_attn_plan_call        the checks and the regime choice (no driver call)
//   evo_attn_forward          the whole call
// Per shape of op_overhead.py. Host us per call: medians of 7 rounds of 200 calls issued back to
// back, the stream drained between rounds and outside the timer (200 launches stay below the
// launch queue's depth, so the host, not the GPU, is timed).
//   g++ -O2 -std=c++17 host_launch_bench.cpp -I$PKG/include -I$PKG/kernels -I$CUDA/include
//       -L$PKG/build -levo_attn -L$CUDA/lib64/stubs -lcuda -Wl,-rpath,$PKG/build -o host_launch_bench
//   ./host_launch_bench > host_launch.md
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "evo_attn.h"
#include "evo_launch.h"

namespace {

bool ok(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "host_launch_bench: %s: %s\n", what, name ? name : "?");
  return false;
}

// Median over rounds of host us per call; `drain` runs between rounds, outside the timer.
double host_us(const std::function<void()>& call, const std::function<void()>& drain, int per_round = 200) {
  std::vector<double> us;
  call();
  drain();
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    drain();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / per_round);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

struct Shape {
  const char* task;
  int b, hq, hkv, sq, skv, d;
  bool bshd, causal;
};

// A tensor [b, h, s, d] of fp16 in BHSD or BSHD order at `data`.
evo_attn_tensor tensor_of(CUdeviceptr data, const Shape& s, int h, int seq) {
  evo_attn_tensor t{};
  t.data = data;
  const int64_t size[4] = {s.b, h, seq, s.d};
  std::memcpy(t.size, size, sizeof(size));
  const int64_t bhsd[4] = {int64_t(h) * seq * s.d, int64_t(seq) * s.d, s.d, 1};
  const int64_t bshd[4] = {int64_t(seq) * h * s.d, s.d, int64_t(h) * s.d, 1};
  std::memcpy(t.stride, s.bshd ? bshd : bhsd, sizeof(bhsd));
  return t;
}

// The floor rows: one figure each, independent of the shape.
void driver_rows(CUstream stream, CUfunction empty, CUdeviceptr scratch) {
  const auto drain = [&] { cuStreamSynchronize(stream); };
  const auto none = [] {};
  CUcontext ctx = nullptr;
  std::printf("| cuCtxGetCurrent | %.2f |\n", host_us([&] { cuCtxGetCurrent(&ctx); }, none, 2000));
  CUstreamCaptureStatus status;
  cuuint64_t id = 0;
  std::printf(
      "| cuStreamGetCaptureInfo | %.2f |\n",
      host_us([&] { cuStreamGetCaptureInfo(stream, &status, &id, nullptr, nullptr, nullptr, nullptr); }, none, 2000));
  // A K map as a stage-7 kernel asks for it: fp16 [B*H*S, D] rows of 128 B, box 64 x 64, 128B swizzle.
  CUtensorMap map;
  const cuuint64_t dims[2] = {64, 8 * 512};
  const cuuint64_t strides[1] = {64 * 2};
  const cuuint32_t box[2] = {64, 64}, elem[2] = {1, 1};
  std::printf("| cuTensorMapEncodeTiled | %.2f |\n",
              host_us(
                  [&] {
                    cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, reinterpret_cast<void*>(scratch),
                                           dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                           CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
                  },
                  none, 2000));
  std::printf("| cuMemsetD8Async 1 KiB | %.2f |\n", host_us([&] { cuMemsetD8Async(scratch, 0, 1024, stream); }, drain));
  EvoAttnParams params{};
  void* args[] = {&params};
  std::printf("| cuLaunchKernel (empty, %zu B of parameters) | %.2f |\n", sizeof(params),
              host_us([&] { cuLaunchKernel(empty, 132, 1, 1, 128, 1, 1, 0, stream, args, nullptr); }, drain));
  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = 132;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = stream;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  std::printf("| cuLaunchKernelEx (empty, cluster of 2) | %.2f |\n",
              host_us([&] { cuLaunchKernelEx(&cfg, empty, args, nullptr); }, drain));
}

void shape_rows(CUstream stream, const Shape& s) {
  const size_t q_bytes = size_t(s.b) * s.hq * s.sq * s.d * 2, kv_bytes = size_t(s.b) * s.hkv * s.skv * s.d * 2;
  CUdeviceptr q = 0, k = 0, v = 0, o = 0;
  if (!ok(cuMemAlloc(&q, q_bytes), "cuMemAlloc") || !ok(cuMemAlloc(&k, kv_bytes), "cuMemAlloc") ||
      !ok(cuMemAlloc(&v, kv_bytes), "cuMemAlloc") || !ok(cuMemAlloc(&o, q_bytes), "cuMemAlloc"))
    return;
  cuMemsetD8(q, 0, q_bytes);
  cuMemsetD8(k, 0, kv_bytes);
  cuMemsetD8(v, 0, kv_bytes);
  evo_attn_call call{};
  call.q = tensor_of(q, s, s.hq, s.sq);
  call.k = tensor_of(k, s, s.hkv, s.skv);
  call.v = tensor_of(v, s, s.hkv, s.skv);
  call.o = tensor_of(o, s, s.hq, s.sq);
  call.dtype = call.out_dtype = EVO_ATTN_FP16;
  call.is_causal = s.causal;
  call.scale = 0.125f;
  call.q_descale = call.k_descale = call.v_descale = 1.0f;
  evo_attn_plan plan{};
  char message[512];
  if (evo_attn_plan_call(&call, &plan, message, sizeof(message)) != EVO_ATTN_OK) {
    std::fprintf(stderr, "%s %dx%dx%dx%dx%d: %s\n", s.task, s.b, s.hq, s.hkv, s.sq, s.skv, message);
  } else {
    const auto drain = [&] { cuStreamSynchronize(stream); };
    const double plan_us = host_us([&] { evo_attn_plan_call(&call, &plan, nullptr, 0); }, [] {}, 2000);
    const double forward_us = host_us([&] { evo_attn_forward(&call, stream, nullptr, 0); }, drain);
    std::printf("| %s | %dx%dx%dx%dx%d%s | %s | %u | %.2f | %.2f |\n", s.task, s.b, s.hq, s.hkv, s.sq, s.skv,
                s.bshd ? ":bshd" : "", evo_attn_kernel_label(plan.kernel), plan.cluster_x, plan_us, forward_us);
  }
  cuMemFree(q);
  cuMemFree(k);
  cuMemFree(v);
  cuMemFree(o);
}

}  // namespace

int main() {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (!ok(cuInit(0), "cuInit") || !ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
    return 1;
  char message[512];
  if (evo_attn_load(0, message, sizeof(message)) != EVO_ATTN_OK) {
    std::fprintf(stderr, "host_launch_bench: %s\n", message);
    return 1;
  }
  // An empty kernel taking an EvoAttnParams-sized parameter, from PTX (the driver JITs it).
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry evo_empty(.param .align 64 .b8 p[" +
      std::to_string(sizeof(EvoAttnParams)) + "]) { ret; }\n";
  CUmodule module = nullptr;
  CUfunction empty = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr scratch = 0;
  if (!ok(cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData(empty kernel PTX)") ||
      !ok(cuModuleGetFunction(&empty, module, "evo_empty"), "cuModuleGetFunction") ||
      !ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !ok(cuMemAlloc(&scratch, 64 * 8 * 512 * 2), "cuMemAlloc"))
    return 1;
  std::printf("# Host us per call of evo_attn_forward's parts (C++, medians of 7 rounds of 200 calls)\n\n");
  std::printf("| driver call | host us |\n|---|---:|\n");
  driver_rows(stream, empty, scratch);
  std::printf("\n| task | shape | kernel | cluster | evo_attn_plan_call us | evo_attn_forward us |\n");
  std::printf("|---|---|---|---:|---:|---:|\n");
  const Shape shapes[] = {
      {"fp16-d64", 1, 8, 8, 512, 512, 64, false, false},
      {"fp16-d64-causal", 1, 8, 8, 512, 512, 64, false, true},
      {"fp16-d128", 1, 32, 8, 1, 8192, 128, true, false},
      {"fp16-d64", 1, 1, 1, 1, 64, 64, false, false},
  };
  for (const Shape& s : shapes) shape_rows(stream, s);
  return 0;
}
