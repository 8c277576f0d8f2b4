#include "gpu/fp8_inputs.h"

#include <fmt/format.h>

#include "core/paths.h"
#include "gpu/worker_device.h"
#include "store/atomic_file.h"

namespace evo::worker_device {

namespace {
// The largest finite e4m3 value: the amax element lands on it.
constexpr float kE4m3Max = 448.0f;
}  // namespace

Support load_support_kernels(const std::string& cubin_path, const Task& task, const std::string& reference_kernel) {
  Support s;
  std::string image = read_file(cubin_path);
  check(cu().cuModuleLoadData(&s.module, image.data()), "loading evo support kernels", "runtime");
  const std::string dt = task.dtype_name();
  check(cu().cuModuleGetFunction(&s.fill, s.module, ("evo_fill_" + dt).c_str()), "evo_fill", "runtime");
  const std::string out_fill = task.dtype == DType::fp16 ? "evo_fill_fp16" : "evo_fill_bf16";  // fp8: O is bf16
  check(cu().cuModuleGetFunction(&s.fill_out, s.module, out_fill.c_str()), "evo_fill (output)", "runtime");
  check(cu().cuModuleGetFunction(&s.hold, s.module, "evo_hold"), "evo_hold", "runtime");
  check(cu().cuModuleGetFunction(&s.fill_bits, s.module, "evo_fill_bits16"), "evo_fill_bits16", "runtime");
  check(cu().cuModuleGetFunction(&s.fill_words, s.module, "evo_fill_bf16"), "evo_fill_bf16", "runtime");
  s.reference_tiled = reference_kernel == "tiled";
  const std::string ref = fmt::format("evo_reference_{}{}_d{}", s.reference_tiled ? "tiled_" : "", dt, task.head_dim);
  check(cu().cuModuleGetFunction(&s.reference, s.module, ref.c_str()), "evo_reference", "runtime");
  if (task.dtype == DType::fp8) {
    check(cu().cuModuleGetFunction(&s.amax, s.module, "evo_amax"), "evo_amax", "runtime");
    check(cu().cuMemAlloc(&s.amax_bits, sizeof(unsigned)), "cuMemAlloc(amax)", "runtime");
  }
  return s;
}

float fill_e4m3(const Support& sup, const TensorDesc& d, unsigned seed, unsigned tensor, const FillParams& f,
                CUstream stream, unsigned long long nonce) {
  return fill_e4m3_parts(sup, {{d, f}}, seed, tensor, stream, nonce);
}

float fill_e4m3_parts(const Support& sup, const std::vector<std::pair<TensorDesc, FillParams>>& parts, unsigned seed,
                      unsigned tensor, CUstream stream, unsigned long long nonce) {
  CUdeviceptr bits = sup.amax_bits;
  check(cu().cuMemsetD8Async(bits, 0, sizeof(unsigned), stream), "amax reset", "runtime");
  for (const auto& [d, f] : parts) {  // evo_amax keeps the largest |value| over every part
    TensorDesc desc = d;
    FillParams fp = f;
    void* amax_args[] = {&desc, &seed, &tensor, &fp, &nonce, &bits};
    check(cu().cuLaunchKernel(sup.amax, 1024, 1, 1, 256, 1, 1, 0, stream, amax_args, nullptr), "amax", "runtime");
  }
  float amax = 0;
  check(cu().cuStreamSynchronize(stream), "amax");
  check(cu().cuMemcpyDtoH(&amax, bits, sizeof(amax)), "amax readback");
  float scale = amax > 0 ? kE4m3Max / amax : 1.0f;
  for (const auto& [d, f] : parts) {
    TensorDesc desc = d;
    FillParams fp = f;
    void* fill_args[] = {&desc, &seed, &tensor, &fp, &scale, &nonce};
    check(cu().cuLaunchKernel(sup.fill, 1024, 1, 1, 256, 1, 1, 0, stream, fill_args, nullptr), "input fill", "runtime");
  }
  return 1.0f / scale;
}

void dump_inputs(const Problem& p, const std::string& out_path) {
  write_file_atomic(out_path + ".q", p.logical(Problem::Tensor::q));
  write_file_atomic(out_path + ".k", p.logical(Problem::Tensor::k));
  write_file_atomic(out_path + ".v", p.logical(Problem::Tensor::v));
  write_file_atomic(out_path + ".descale", std::string(reinterpret_cast<const char*>(p.descale), sizeof(p.descale)));
}

}  // namespace evo::worker_device
