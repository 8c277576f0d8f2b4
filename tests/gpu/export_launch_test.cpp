// The package `evo export` writes launches each of its kernels exactly as evo's worker launched
// it when it gated and timed it (issue 29 item 4): both compile the ABI floor's host half
// (variants/common/evo_host_launch.h), and this checks the result on the GPU. A package is
// exported from populations derived from the committed records and built with CMake; for every
// kernel, on a shape of one of its regimes in BHSD and in BSHD (GQA, odd lengths), the worker's
// gate output (`evo __worker`, candidate mode) and the package's evo_attn_forward over the same
// inputs (dumped by a reference job of the same seed) must be equal bit for bit. Skips without a
// GPU and on GPUs other than the package's (sm_90).
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "compile/compiler.h"
#include "compile/cubin.h"
#include "core/paths.h"
#include "evo_attn.h"
#include "gpu/cuda_driver.h"
#include "gpu/device_query.h"
#include "gpu/worker_protocol.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every dtype and head dim that ships, causal and not, a TMA stage and the split-KV decode kernels
// among them. `evo export` refuses a task without a deep-gated kernel (docs/deploy.md), so every
// task named here must hold one in the committed records (the H200, 2026-11-30: fp8-d64-causal
// held none between the revocation of the one-level FP8 sum and the fixed kernel's run on it).
const char* kTasks = "fp16-d64,fp16-d128-causal,bf16-d128,fp8-d64,fp8-d64-causal";

struct Api {
  void* lib = nullptr;
  int (*plan)(const evo_attn_call*, evo_attn_plan*, char*, size_t) = nullptr;
  int (*forward)(const evo_attn_call*, void*, char*, size_t) = nullptr;
  const char* (*kernel_name)(int) = nullptr;
};

// The package built from an export of the committed records' per-regime elites.
fs::path exported_package() {
  const fs::path dir = test::scratch_dir("export-launch");
  auto r = test::run_evo("population rebuild --results-dir " + test::shell_quote(test::committed_results()) +
                         " --populations-dir " + test::shell_quote(dir / "populations"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = test::run_evo(std::string("export --task ") + kTasks + " --gpu nvidia-h200 --out " +
                    test::shell_quote(dir / "pkg") + " --populations-dir " + test::shell_quote(dir / "populations"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = test::run_shell("cmake -S " + test::shell_quote(dir / "pkg") + " -B " + test::shell_quote(dir / "pkg" / "build") +
                      " -DCMAKE_BUILD_TYPE=Release -DEVO_ATTN_TORCH_OP=OFF > /dev/null && cmake --build " +
                      test::shell_quote(dir / "pkg" / "build") + " -j 4 2>&1 | tail -20");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return dir / "pkg";
}

// A shape of `regime` under the package's rule: GQA everywhere, lengths no tile size divides.
// `second`: a decode batch of 21 (42 query tiles of a pack-GQA kernel, more than the first
// shape's tile counters cover, and under a third of the H200's SMs, so it still splits), run after
// the first in the same process as a model's growing decode batch does: the package's reused split workspace must not
// hand it the first launch's partials as counters.
Shape regime_shape(const std::string& regime, const json& rule, int head_dim, bool second = false) {
  const int decode_max = rule["decode_max_seq_q"], short_max = rule["short_max_seq_q"];
  const long long batched = rule["batched_min_batch_heads"];
  const int short_len = std::min(short_max, std::max(decode_max + 1, 197));
  Shape s;
  s.head_dim = head_dim;
  auto dims = [&s](int b, int hq, int hkv, int sq, int skv) {
    s.batch = b;
    s.heads_q = hq;
    s.heads_kv = hkv;
    s.seq_q = sq;
    s.seq_kv = skv;
  };
  if (regime == "decode")
    dims(second ? 21 : 2, 8, 2, 1, 1000);
  else if (regime == "short")
    dims(1, 4, 2, short_len, 333);
  else if (regime == "batched-short")
    dims(int((batched + 7) / 8), 8, 4, short_len, 150);
  else
    dims(1, 2, 1, short_max + 77, short_max + 77);
  return s;
}

// Rows of head_dim elements from logical BHSD order into BSHD's ([b][s][h]), or back.
std::string relayout(const std::string& in, int b, int h, int s, size_t row, bool bshd, bool to_bshd) {
  if (!bshd) return in;
  std::string out(in.size(), '\0');
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < h; ++j)
      for (int k = 0; k < s; ++k) {
        const size_t logical = ((size_t(i) * h + j) * s + k) * row, token = ((size_t(i) * s + k) * h + j) * row;
        std::memcpy(&out[to_bshd ? token : logical], &in[to_bshd ? logical : token], row);
      }
  return out;
}

struct DeviceTensor {
  CUdeviceptr data = 0;
  evo_attn_tensor desc{};
  ~DeviceTensor() {
    if (data) cuda_driver().cuMemFree(data);
  }
};

// Uploads logical BHSD bytes in the case's layout; `bytes` empty: an output of that size, zeroed.
void upload(DeviceTensor& t, const std::string& bytes, size_t size, int b, int h, int s, int d, int elem, bool bshd) {
  const auto& cu = cuda_driver();
  ASSERT_EQ(cu.cuMemAlloc(&t.data, size), CUDA_SUCCESS);
  if (bytes.empty())
    ASSERT_EQ(cu.cuMemsetD8(t.data, 0, size), CUDA_SUCCESS);
  else
    ASSERT_EQ(cu.cuMemcpyHtoD(t.data, relayout(bytes, b, h, s, size_t(d) * elem, bshd, true).data(), size),
              CUDA_SUCCESS);
  const int64_t hd = int64_t(h) * d, sd = int64_t(s) * d;
  t.desc = bshd ? evo_attn_tensor{t.data, {b, h, s, d}, {s * hd, d, hd, 1}}
                : evo_attn_tensor{t.data, {b, h, s, d}, {h * sd, sd, d, 1}};
}

// The package's output for one case whose inputs a reference job dumped beside `ref`.
std::string package_output(const Api& api, const Task& task, const CaseSpec& c, const std::string& ref,
                           int want_kernel) {
  const Shape& s = c.shape;
  const bool bshd = s.layout == Layout::bshd;
  const int in = task.input_bytes(), out = task.output_bytes();
  const size_t q_bytes = size_t(s.batch) * s.heads_q * s.seq_q * s.head_dim;
  const size_t kv_bytes = size_t(s.batch) * s.heads_kv * s.seq_kv * s.head_dim;
  DeviceTensor q, k, v, o;
  upload(q, read_file(ref + ".q"), q_bytes * in, s.batch, s.heads_q, s.seq_q, s.head_dim, in, bshd);
  upload(k, read_file(ref + ".k"), kv_bytes * in, s.batch, s.heads_kv, s.seq_kv, s.head_dim, in, bshd);
  upload(v, read_file(ref + ".v"), kv_bytes * in, s.batch, s.heads_kv, s.seq_kv, s.head_dim, in, bshd);
  upload(o, "", q_bytes * out, s.batch, s.heads_q, s.seq_q, s.head_dim, out, bshd);
  evo_attn_call call{};
  call.q = q.desc;
  call.k = k.desc;
  call.v = v.desc;
  call.o = o.desc;
  call.dtype = task.dtype_code();
  call.out_dtype = task.dtype == DType::fp8 ? EVO_ATTN_BF16 : call.dtype;
  call.is_causal = task.causal ? 1 : 0;
  call.scale = 1.0f / std::sqrt(float(s.head_dim));  // the worker's default scale (worker_device.h: fill)
  call.q_descale = call.k_descale = call.v_descale = 1.0f;
  if (task.dtype == DType::fp8) {
    const std::string ds = read_file(ref + ".descale");
    EXPECT_EQ(ds.size(), 3 * sizeof(float));
    std::memcpy(&call.q_descale, ds.data(), sizeof(float));
    std::memcpy(&call.k_descale, ds.data() + 4, sizeof(float));
    std::memcpy(&call.v_descale, ds.data() + 8, sizeof(float));
  }
  evo_attn_plan plan{};
  char message[512] = {};
  EXPECT_EQ(api.plan(&call, &plan, message, sizeof(message)), EVO_ATTN_OK) << message;
  EXPECT_EQ(plan.kernel, want_kernel) << c.id << ": the package dispatches this shape elsewhere";
  EXPECT_EQ(api.forward(&call, nullptr, message, sizeof(message)), EVO_ATTN_OK) << message;
  EXPECT_EQ(cuda_driver().cuCtxSynchronize(), CUDA_SUCCESS);
  std::string bytes(q_bytes * out, '\0');
  EXPECT_EQ(cuda_driver().cuMemcpyDtoH(bytes.data(), o.data, bytes.size()), CUDA_SUCCESS);
  return relayout(bytes, s.batch, s.heads_q, s.seq_q, size_t(s.head_dim) * out, bshd, false);
}

// Runs a worker job (stdin closed: a candidate job stops after its gate); true when it finished.
bool run_worker(const WorkerJob& job, const fs::path& dir, const std::string& name) {
  const fs::path file = dir / (name + ".json");
  test::write_text(file, to_json(job).dump());
  const auto r = test::run_evo("__worker " + test::shell_quote(file) + " < /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("\"error\""), std::string::npos) << name << ": " << r.out;
  return r.exit_code == 0 && r.out.find("\"error\"") == std::string::npos;
}

TEST(ExportedLaunch, EveryKernelMatchesTheWorkersLaunchBitwise) {
  EVO_REQUIRE_GPU();
  const GpuInfo gpu = query_gpu(0);
  if (gpu.cc != 90) GTEST_SKIP() << "the package's kernels are sm_90a cubins (this GPU: cc " << gpu.cc << ")";
  const fs::path pkg = exported_package();
  ASSERT_TRUE(fs::exists(pkg / "build" / "libevo_attn.so"));
  Api api;
  api.lib = dlopen((pkg / "build" / "libevo_attn.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(api.lib, nullptr) << dlerror();
  api.plan = reinterpret_cast<decltype(api.plan)>(dlsym(api.lib, "evo_attn_plan_call"));
  api.forward = reinterpret_cast<decltype(api.forward)>(dlsym(api.lib, "evo_attn_forward"));
  api.kernel_name = reinterpret_cast<decltype(api.kernel_name)>(dlsym(api.lib, "evo_attn_kernel_name"));
  ASSERT_TRUE(api.plan && api.forward && api.kernel_name);
  // This process's context is the device's primary one, which the package launches in.
  const auto& cu = cuda_driver();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  ASSERT_EQ(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);

  Context repo = Context::load();
  Compiler compiler(repo.root, test::scratch_dir("export-launch-cache"), repo.gates);
  const fs::path support = compiler.compile_support(gpu.arch());
  const json m = json::parse(read_file(pkg / "manifest.json"));
  const fs::path work = test::scratch_dir("export-launch-cases");
  int kernels = 0;
  for (size_t ki = 0; ki < m["kernels"].size(); ++ki) {
    const json& k = m["kernels"][ki];
    const std::string name = k["name"];
    const Task task = parse_task(k["task"]);
    ASSERT_STREQ(api.kernel_name(int(ki)), name.c_str());
    const std::string regime = k["regimes"][0];
    SCOPED_TRACE(fmt::format("kernel {} ({}), {} regime", name, k["label"].get<std::string>(), regime));
    WorkerJob ref;
    ref.mode = "reference";
    ref.task = task;
    ref.support_cubin = support.string();
    ref.dump_inputs = true;
    WorkerJob cand = ref;
    cand.mode = "candidate";
    cand.dump_inputs = false;
    cand.cubin = (pkg / k["cubin"].get<std::string>()).string();
    std::string why;
    const auto launch = read_launch_geometry(read_file(cand.cubin), &why);
    ASSERT_TRUE(launch) << why;
    cand.launch = *launch;
    for (Layout layout : {Layout::bhsd, Layout::bshd})
      for (bool second : {false, true}) {
        if (second && regime != "decode") continue;
        CaseSpec c;
        c.shape = regime_shape(regime, m["rule"], task.head_dim, second);
        c.shape.layout = layout;
        c.id = fmt::format("{}-{}{}", name, layout == Layout::bshd ? "bshd" : "bhsd", second ? "-batch21" : "");
        c.seed = 29;
        c.out_path = (work / (c.id + ".ref")).string();
        ref.cases.push_back(c);
        c.out_path = (work / (c.id + ".out")).string();
        cand.cases.push_back(c);
      }
    if (!run_worker(ref, work, name + "-reference") || !run_worker(cand, work, name + "-candidate")) continue;
    for (size_t i = 0; i < cand.cases.size(); ++i) {
      const CaseSpec& c = cand.cases[i];
      const std::string worker = read_file(c.out_path);
      const std::string package = package_output(api, task, c, ref.cases[i].out_path, int(ki));
      ASSERT_EQ(worker.size(), package.size()) << c.id;
      size_t differ = 0, first = worker.size();
      for (size_t b = 0; b < worker.size(); ++b)
        if (worker[b] != package[b]) first = std::min(first, b), ++differ;
      EXPECT_EQ(differ, 0u) << c.id << ": " << differ << " bytes differ from the worker's output, the first at byte "
                            << first;
    }
    ++kernels;
  }
  EXPECT_GT(kernels, 0);
  dlclose(api.lib);
}

}  // namespace
}  // namespace evo
