#include "gpu/tma_maps.h"

#include <fmt/format.h>

#include <cstring>

#include "gpu/cuda_driver.h"

namespace evo {

namespace {

// The driver's entry point, looked up once.
EvoEncodeTiled encode_tiled(std::string* error) {
  static std::string why;
  static const EvoEncodeTiled fn = [] {
    CUresult r = CUDA_SUCCESS;
    const EvoEncodeTiled found = evo_find_encode_tiled(cuda_driver(), &r);
    if (!found) why = fmt::format("cuGetProcAddress(cuTensorMapEncodeTiled) failed ({})", cuda_error_text(r));
    return found;
  }();
  if (!fn && error) *error = why;
  return fn;
}

const char* tensor_name(uint32_t t) {
  static const char* names[] = {"none", "Q", "K", "V", "O"};
  return t < 5 ? names[t] : "?";
}

std::optional<std::string> encode_one(EvoEncodeTiled fn, const TmaSpec& s, const EvoTensor& t, DType dtype,
                                      CUtensorMap* map) {
  const EvoTmaArgs a = evo_tma_args(s, t, int(dtype));
  const CUresult r = evo_encode_tma(fn, a, t.data, map);
  if (r != CUDA_SUCCESS)
    return fmt::format("cuTensorMapEncodeTiled: {} (dims {}x{}x{}x{}, byte strides {}/{}/{}, box {}x{}, swizzle {})",
                       cuda_error_text(r), a.dims[0], a.dims[1], a.dims[2], a.dims[3], a.strides[0], a.strides[1],
                       a.strides[2], s.box_rows, s.box_cols, s.swizzle);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> encode_tma_maps(const std::vector<TmaSpec>& specs, const EvoTensor (&tensors)[4],
                                           DType dtype, unsigned long long (*out)[16]) {
  for (size_t i = 0; i < specs.size() && i < size_t(kTmaSlots); ++i) {
    const TmaSpec& s = specs[i];
    if (s.tensor == EVO_TMA_NONE) continue;
    if (const char* problem = evo_tma_spec_problem(s))
      return fmt::format("evo_tma[{}] (tensor {}, box {}x{}, swizzle {}, l2 {}): {}", i, s.tensor, s.box_rows,
                         s.box_cols, s.swizzle, s.l2_promotion, problem);
    std::string why;
    EvoEncodeTiled fn = encode_tiled(&why);
    if (!fn) return why;
    CUtensorMap map;
    if (auto err = encode_one(fn, s, tensors[s.tensor - 1], dtype, &map))
      return fmt::format("TMA map {} ({}): {}", i, tensor_name(s.tensor), *err);
    std::memcpy(out[i], &map, sizeof(map));
  }
  return std::nullopt;
}

}  // namespace evo
