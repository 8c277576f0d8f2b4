// evo doctor: what this machine can do, one line per piece, each OK or what to do about it.
#include <fmt/format.h>
#include <unistd.h>

#include <functional>
#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "compile/compiler.h"
#include "compile/nvrtc.h"
#include "core/errors.h"
#include "core/paths.h"
#include "gpu/cuda_driver.h"
#include "gpu/nvml.h"

namespace evo {

namespace {

void line(bool ok, const std::string& what, const std::string& detail) {
  std::cout << fmt::format("{:<5} {:<14} {}\n", ok ? "OK" : "FIX", what, detail);
}

using Report = std::function<void(bool ok, const std::string& what, const std::string& detail)>;

// The driver and every visible device, with what evo needs of each.
void check_devices(const Report& report) {
  const auto& cu = cuda_driver();
  int version = 0;
  cu.cuDriverGetVersion(&version);
  CUresult r = cu.cuInit(0);
  int count = 0;
  if (r == CUDA_SUCCESS) cu.cuDeviceGetCount(&count);
  report(r == CUDA_SUCCESS, "driver",
         fmt::format("CUDA driver API {}.{}{}", version / 1000, (version % 1000) / 10,
                     r == CUDA_SUCCESS ? "" : " but cuInit failed: " + cuda_error_text(r)));
  if (count == 0) report(false, "gpu", "no CUDA device visible (check CUDA_VISIBLE_DEVICES and the driver)");
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    cu.cuDeviceGet(&dev, i);
    char name[256] = {};
    cu.cuDeviceGetName(name, sizeof(name), dev);
    int major = 0, minor = 0, sms = 0, l2 = 0;
    cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    size_t mem = 0;
    cu.cuDeviceTotalMem(&mem, dev);
    auto clock = nvml_sm_clock_mhz(i);
    report(major >= 8, fmt::format("gpu {}", i),
           fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB, L2 {} MiB, SM clock {}){}", name, major, minor, sms,
                       mem / double(1 << 30), l2 >> 20, clock ? std::to_string(*clock) + " MHz" : "n/a (no NVML)",
                       major >= 8 ? "" : ": evo variants need sm_80 or newer"));
  }
}

void run_doctor(const CacheDir& cache_dir) {
  bool all_ok = true;
  auto report = [&](bool ok, const std::string& what, const std::string& detail) {
    all_ok &= ok;
    line(ok, what, detail);
  };
  try {
    Context ctx = Context::load();
    size_t variants = 0;
    for (const auto& s : ctx.stages) variants += s.variants.size();
    report(true, "repository",
           fmt::format("{} ({} stages, {} variants)", ctx.root.string(), ctx.stages.size(), variants));
  } catch (const EvoError& e) {
    report(false, "repository", e.what());
  }
  report(true, "nvrtc", "NVRTC " + nvrtc_version());
  if (auto inc = cuda_include_dir()) {
    bool cccl = std::filesystem::exists(*inc / "cccl");
    report(true, "cuda headers", inc->string() + (cccl ? " (+ cccl)" : ""));
  } else {
    report(false, "cuda headers", "not found: set CUDA_HOME to the CUDA toolkit (the dir with include/cuda_fp16.h)");
  }
  const std::filesystem::path cache = cache_dir.cache_path();
  try {
    ensure_writable_dir(cache, "cache dir", "--cache-dir");
    report(true, "cache dir", cache.string());
  } catch (const EvoError& e) {
    report(false, "cache dir", e.what());
  }
  std::string why;
  if (!cuda_driver_available(&why)) {
    report(false, "driver", "libcuda.so.1 not loadable (" + why + "): GPU commands (run, gate) need an NVIDIA driver");
    report(false, "gpu", "none: compile, list, compare and the unit/nvrtc tests still work here");
  } else {
    check_devices(report);
  }
  if (!all_ok) throw CommandFailed(kExitEnvironment);  // each failed check is reported above
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto cache_dir = std::make_shared<CacheDir>();
  auto* cmd = app.add_subcommand("doctor", "Check GPU, driver, NVRTC, headers and cache dir");
  add_cache_dir(cmd, *cache_dir);
  cmd->callback([cache_dir] { run_doctor(*cache_dir); });
}

}  // namespace evo
