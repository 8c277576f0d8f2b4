// The C API (evo_attn.h) over the package's tables, the checks and the launcher.
#include <cstring>
#include <string>

#include "evo_attn.h"
#include "launch.h"
#include "package.h"

using evo_attn::kPackage;

namespace {

int report(int status, const std::string& error, char* message, size_t size) {
  if (message && size > 0) {
    const std::string line = status == EVO_ATTN_OK ? std::string() : "evo_attn: " + error;
    std::strncpy(message, line.c_str(), size - 1);
    message[size - 1] = '\0';
  }
  return status;
}

}  // namespace

extern "C" {

int evo_attn_plan_call(const evo_attn_call* call, evo_attn_plan* out, char* message, size_t message_size) {
  if (!call) return report(EVO_ATTN_UNSUPPORTED, "call is NULL", message, message_size);
  evo_attn::Plan plan;
  std::string error;
  if (!evo_attn::plan_call(kPackage, *call, plan, error))
    return report(EVO_ATTN_UNSUPPORTED, error, message, message_size);
  if (out) {
    const evo_attn::Kernel& k = kPackage.kernels[plan.kernel];
    out->kernel = plan.kernel;
    out->regime = plan.regime;
    out->task = kPackage.tasks[plan.task].name;
    out->threads = k.launch.threads;
    out->smem_bytes = k.launch.smem_bytes;
    out->rows_per_cta = k.launch.rows_per_cta;
    out->cluster_x = k.launch.cluster_x;
    out->persistent = k.launch.persistent;
    out->tiles = plan.tiles;
  }
  return report(EVO_ATTN_OK, "", message, message_size);
}

int evo_attn_forward(const evo_attn_call* call, void* stream, char* message, size_t message_size) {
  if (!call) return report(EVO_ATTN_UNSUPPORTED, "call is NULL", message, message_size);
  evo_attn::Plan plan;
  std::string error;
  if (!evo_attn::plan_call(kPackage, *call, plan, error))
    return report(EVO_ATTN_UNSUPPORTED, error, message, message_size);
  return report(evo_attn::launch(kPackage, *call, plan, static_cast<CUstream>(stream), error), error, message,
                message_size);
}

int evo_attn_load(int device, char* message, size_t message_size) {
  if (device < 0) return report(EVO_ATTN_UNSUPPORTED, "device is negative", message, message_size);
  std::string error;
  return report(evo_attn::load_device(kPackage, device, error), error, message, message_size);
}

int evo_attn_api_version(void) { return EVO_ATTN_API_VERSION; }
const char* evo_attn_package_gpu(void) { return kPackage.gpu; }
int evo_attn_package_arch(void) { return kPackage.arch; }
const char* evo_attn_tasks(void) { return kPackage.task_list; }
int evo_attn_kernel_count(void) { return kPackage.kernel_count; }

const char* evo_attn_kernel_name(int kernel) {
  return kernel >= 0 && kernel < kPackage.kernel_count ? kPackage.kernels[kernel].name : nullptr;
}

const char* evo_attn_kernel_label(int kernel) {
  return kernel >= 0 && kernel < kPackage.kernel_count ? kPackage.kernels[kernel].label : nullptr;
}

const char* evo_attn_regime_name(int regime) { return evo_regime_name(regime); }

}  // extern "C"
