#include "gpu/tma_maps.h"

#include <fmt/format.h>

#include <cstring>

#include "gpu/cuda_driver.h"

namespace evo {

namespace {

using EncodeTiled = decltype(&::cuTensorMapEncodeTiled);

// The driver's entry point, looked up once (CUDA 12.0 ABI of the function).
EncodeTiled encode_tiled(std::string* error) {
  static EncodeTiled fn = nullptr;
  static std::string why;
  static bool looked = false;
  if (!looked) {
    looked = true;
    void* p = nullptr;
    CUdriverProcAddressQueryResult status{};
    CUresult r =
        cuda_driver().cuGetProcAddress("cuTensorMapEncodeTiled", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p)
      why = fmt::format("cuGetProcAddress(cuTensorMapEncodeTiled) failed ({}, status {})", cuda_error_text(r),
                        int(status));
    else
      fn = reinterpret_cast<EncodeTiled>(p);
  }
  if (!fn && error) *error = why;
  return fn;
}

const char* tensor_name(uint32_t t) {
  static const char* names[] = {"none", "Q", "K", "V", "O"};
  return t < 5 ? names[t] : "?";
}

// The element type of one tensor of a task: fp8 tasks' Q, K, V are e4m3 bytes (UINT8 to the copy
// engine, which only moves them) and their O is bf16.
struct TmaElement {
  CUtensorMapDataType type;
  unsigned long long bytes;
};

TmaElement tma_element(DType dtype, uint32_t tensor) {
  if (dtype == DType::fp8)
    return tensor == 4 ? TmaElement{CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2} : TmaElement{CU_TENSOR_MAP_DATA_TYPE_UINT8, 1};
  return {dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2};
}

std::optional<std::string> encode_one(EncodeTiled fn, const TmaSpec& s, const TmaTensor& t, TmaElement e,
                                      CUtensorMap* map) {
  if (s.box_rows < 1 || s.box_rows > 256 || s.box_cols < 8 || s.box_cols > 256 || s.swizzle > 3 || s.l2_promotion > 3)
    return fmt::format("box {}x{}, swizzle {}, l2 {} is outside what TMA accepts", s.box_rows, s.box_cols, s.swizzle,
                       s.l2_promotion);
  const cuuint64_t dims[4] = {cuuint64_t(t.dim), cuuint64_t(t.seq), cuuint64_t(t.heads), cuuint64_t(t.batch)};
  // Byte strides of dims 1..3 (seq, head, batch); the innermost dim is contiguous.
  const cuuint64_t strides[3] = {cuuint64_t(t.stride[2]) * e.bytes, cuuint64_t(t.stride[1]) * e.bytes,
                                 cuuint64_t(t.stride[0]) * e.bytes};
  const cuuint32_t box[4] = {s.box_cols, s.box_rows, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = fn(map, e.type, 4, reinterpret_cast<void*>(t.data), dims, strides, box, elem_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(s.swizzle), CUtensorMapL2promotion(s.l2_promotion),
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fmt::format("cuTensorMapEncodeTiled: {} (dims {}x{}x{}x{}, byte strides {}/{}/{}, box {}x{}, swizzle {})",
                       cuda_error_text(r), t.dim, t.seq, t.heads, t.batch, strides[0], strides[1], strides[2],
                       s.box_rows, s.box_cols, s.swizzle);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> encode_tma_maps(const std::vector<TmaSpec>& specs, const TmaTensors& tensors, DType dtype,
                                           unsigned long long (*out)[16]) {
  static_assert(sizeof(CUtensorMap) == 16 * sizeof(unsigned long long), "EvoAttnParams.tma slots hold one CUtensorMap");
  for (size_t i = 0; i < specs.size() && i < size_t(kTmaSlots); ++i) {
    const TmaSpec& s = specs[i];
    if (s.tensor == 0) continue;
    if (s.tensor > 4) return fmt::format("evo_tma[{}]: tensor {} is not EVO_TMA_Q/K/V/O", i, s.tensor);
    std::string why;
    EncodeTiled fn = encode_tiled(&why);
    if (!fn) return why;
    CUtensorMap map;
    if (auto err = encode_one(fn, s, tensors.t[s.tensor - 1], tma_element(dtype, s.tensor), &map))
      return fmt::format("TMA map {} ({}): {}", i, tensor_name(s.tensor), *err);
    std::memcpy(out[i], &map, sizeof(map));
  }
  return std::nullopt;
}

}  // namespace evo
