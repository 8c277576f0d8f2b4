// The checks a call must pass and the dispatch (task, then shape regime, then kernel): pure
// functions of the call and the package's tables, so they run (and are tested) without a GPU.
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "evo_domain.h"  // the input domain: kernels/evo_domain.h, beside evo_launch.h
#include "package.h"

namespace evo_attn {

namespace {

constexpr int64_t kMaxInt = 2147483647;
const char* const kTensor[4] = {"q", "k", "v", "o"};

std::string format(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

bool fail(std::string& error, std::string message) {
  error = std::move(message);
  return false;
}

const char* dtype_name(int d) {
  switch (d) {
    case EVO_ATTN_FP16: return "fp16";
    case EVO_ATTN_BF16: return "bf16";
    case EVO_ATTN_FP8_E4M3: return "fp8_e4m3";
  }
  return "unknown";
}

// The dtype as task names spell it ("fp8-d64", not "fp8_e4m3-d64").
const char* task_dtype(int d) { return d == EVO_ATTN_FP8_E4M3 ? "fp8" : dtype_name(d); }

int elem_bytes(int dtype) { return dtype == EVO_ATTN_FP8_E4M3 ? 1 : 2; }

const evo_attn_tensor& tensor(const evo_attn_call& c, int i) {
  const evo_attn_tensor* t[4] = {&c.q, &c.k, &c.v, &c.o};
  return *t[i];
}

bool check_dtype(const Package& p, const evo_attn_call& c, std::string& error) {
  bool any = false;
  for (int i = 0; i < p.task_count; ++i) any = any || p.tasks[i].dtype == c.dtype;
  if (!any)
    return fail(error, format("dtype: %s (%d) has no kernels in this package (its tasks: %s)", dtype_name(c.dtype),
                              c.dtype, p.task_list));
  const int want = c.dtype == EVO_ATTN_FP8_E4M3 ? EVO_ATTN_BF16 : c.dtype;
  if (c.out_dtype != want)
    return fail(error, format("o dtype: %s, but %s inputs give %s output", dtype_name(c.out_dtype), dtype_name(c.dtype),
                              dtype_name(want)));
  return true;
}

bool same_size(const evo_attn_call& c, int t, int dim, int ref_t, const char* what, std::string& error) {
  const int64_t a = tensor(c, t).size[dim], b = tensor(c, ref_t).size[dim];
  if (a == b) return true;
  return fail(error, format("%s.size(%d) = %lld differs from %s.size(%d) = %lld (%s)", kTensor[t], dim, (long long)a,
                            kTensor[ref_t], dim, (long long)b, what));
}

// Each size in [1, its domain bound] (evo_domain.h), the four tensors agreeing, Hkv dividing Hq.
bool check_sizes(const evo_attn_call& c, std::string& error) {
  const char* dims[4] = {"batch", "heads", "sequence length", "head dim"};
  const int64_t bound[4] = {kEvoDomainMaxBatch, kEvoDomainMaxHeadsQ, kEvoDomainMaxSeq, kMaxInt};
  for (int t = 0; t < 4; ++t)
    for (int d = 0; d < 4; ++d) {
      const int64_t s = tensor(c, t).size[d];
      if (s < 1 || s > bound[d])
        return fail(error, format("%s.size(%d) = %lld: the %s must be in [1, %lld] (the op's input domain)",
                                  kTensor[t], d, (long long)s, dims[d], (long long)bound[d]));
    }
  if (!same_size(c, 1, 0, 0, "the batch", error) || !same_size(c, 2, 0, 0, "the batch", error) ||
      !same_size(c, 2, 1, 1, "the key/value heads", error) || !same_size(c, 2, 2, 1, "the key length", error) ||
      !same_size(c, 1, 3, 0, "the head dim", error) || !same_size(c, 2, 3, 0, "the head dim", error))
    return false;
  for (int d = 0; d < 4; ++d)
    if (!same_size(c, 3, d, 0, "the output has q's shape", error)) return false;
  if (c.q.size[1] % c.k.size[1] != 0)
    return fail(error, format("k.size(1) = %lld does not divide q.size(1) = %lld: GQA/MQA needs the query heads to be "
                              "a multiple of the key/value heads",
                              (long long)c.k.size[1], (long long)c.q.size[1]));
  return true;
}

// The task of (dtype, head dim, causal), or -1 with the message naming what is missing.
int find_task(const Package& p, const evo_attn_call& c, std::string& error) {
  const int64_t d = c.q.size[3];
  std::string dims;
  bool dim_exists = false;
  for (int i = 0; i < p.task_count; ++i) {
    const Task& t = p.tasks[i];
    if (t.dtype != c.dtype) continue;
    if (t.head_dim == d && t.causal == (c.is_causal ? 1 : 0)) return i;
    dim_exists = dim_exists || t.head_dim == d;
    const std::string one = std::to_string(t.head_dim);
    if (dims.find(one) == std::string::npos) dims += (dims.empty() ? "" : ", ") + one;
  }
  if (!dim_exists)
    fail(error, format("head_dim: q.size(3) = %lld; this package has %s kernels for head dims %s only", (long long)d,
                       dtype_name(c.dtype), dims.c_str()));
  else
    fail(error, format("is_causal: this package has no %s %s-d%lld kernel (its tasks: %s)",
                       c.is_causal ? "causal" : "non-causal", task_dtype(c.dtype), (long long)d, p.task_list));
  return -1;
}

// The domain's layout (evo_domain.h): head dim contiguous; other strides positive, 16-byte
// multiples (TMA and vector loads need it), gaps allowed; no two rows of the view on the same
// memory; a 16-byte aligned address.
bool check_layout(const evo_attn_tensor& t, const char* name, int bytes, std::string& error) {
  if (t.stride[3] != 1)
    return fail(error, format("%s.stride(3) = %lld: the head dim must be contiguous (stride 1); call .contiguous()",
                              name, (long long)t.stride[3]));
  if (t.data == 0) return fail(error, format("%s.data_ptr() is null", name));
  if (t.data % kEvoDomainAlignBytes != 0)
    return fail(error, format("%s.data_ptr() = 0x%llx is not %lld-byte aligned; call .clone()", name,
                              (unsigned long long)t.data, kEvoDomainAlignBytes));
  for (int d = 0; d < 3; ++d) {
    if (t.size[d] == 1) continue;  // never stepped over: any stride reads the same elements
    const int64_t s = t.stride[d];
    if (s <= 0)
      return fail(error, format("%s.stride(%d) = %lld: broadcast or negative strides are not supported; call "
                                ".contiguous()",
                                name, d, (long long)s));
    if (s > kEvoDomainMaxSpan)
      return fail(error, format("%s.stride(%d) = %lld: beyond the op's input domain (at most 2^32 elements)", name, d,
                                (long long)s));
    if ((s * bytes) % kEvoDomainStrideBytes != 0)
      return fail(error, format("%s.stride(%d) = %lld elements (%lld bytes) is not a multiple of %lld bytes; call "
                                ".contiguous()",
                                name, d, (long long)s, (long long)(s * bytes), kEvoDomainStrideBytes));
  }
  const long long size[3] = {t.size[0], t.size[1], t.size[2]}, stride[3] = {t.stride[0], t.stride[1], t.stride[2]};
  if (!evo_domain_view_is_distinct(size, stride, t.size[3]))
    return fail(error, format("%s.stride() = (%lld, %lld, %lld, 1): rows of the view overlap (each element must have "
                              "its own memory); call .contiguous()",
                              name, stride[0], stride[1], stride[2]));
  return true;
}

// Elements from the first to one past the last one the tensor addresses.
int64_t span(const evo_attn_tensor& t) {
  int64_t last = 0;
  for (int d = 0; d < 4; ++d) last += (t.size[d] - 1) * (t.size[d] == 1 ? 0 : t.stride[d]);
  return last + 1;
}

bool check_overlap(const evo_attn_call& c, std::string& error) {
  const uint64_t o0 = c.o.data, o1 = o0 + uint64_t(span(c.o)) * 2;
  for (int t = 0; t < 3; ++t) {
    const evo_attn_tensor& x = tensor(c, t);
    const uint64_t x0 = x.data, x1 = x0 + uint64_t(span(x)) * uint64_t(elem_bytes(c.dtype));
    if (x0 < o1 && o0 < x1) return fail(error, format("o overlaps %s: the output needs its own memory", kTensor[t]));
  }
  return true;
}

bool check_scalars(const evo_attn_call& c, std::string& error) {
  if (!std::isfinite(c.scale) || c.scale <= 0 || double(c.scale) > kEvoDomainMaxScale)
    return fail(error, format("scale = %g: the softmax scale must be in (0, %g] (the op's input domain)",
                              double(c.scale), kEvoDomainMaxScale));
  const float ds[3] = {c.q_descale, c.k_descale, c.v_descale};
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int i = 0; i < 3; ++i) {
    if (c.dtype != EVO_ATTN_FP8_E4M3 && ds[i] != 1.0f)
      return fail(error, format("%s = %g: descales apply to fp8 inputs only (pass 1)", names[i], double(ds[i])));
    if (!std::isfinite(ds[i]) || ds[i] <= 0)
      return fail(error, format("%s = %g: must be finite and > 0", names[i], double(ds[i])));
  }
  if (c.device < 0) return fail(error, format("device = %d is not a CUDA device ordinal", c.device));
  return true;
}

// At most kEvoDomainMaxSpan elements a view; beyond 2^31 - 1 only as far as the kernel's gate
// cases went (a kernel with 32-bit offsets passes every smaller case).
bool check_extent(const evo_attn_call& c, const Kernel& k, std::string& error) {
  const int64_t gated = k.max_checked_elements > kEvoDomainInt32Span ? k.max_checked_elements : kEvoDomainInt32Span;
  for (int t = 0; t < 4; ++t) {
    const int64_t n = span(tensor(c, t));
    if (n > kEvoDomainMaxSpan)
      return fail(error, format("%s spans %lld elements, beyond the op's input domain (2^32); split the batch",
                                kTensor[t], (long long)n));
    if (n > gated)
      return fail(error, format("%s spans %lld elements, beyond 2^31 - 1 and beyond any case kernel %s (%s) was gated "
                                "on; split the batch",
                                kTensor[t], (long long)n, k.name, k.label));
  }
  return true;
}

}  // namespace

std::string gpu_problem(const Package& p, int device, const char* name, int cc, int sms) {
  const std::string gpu = "device: GPU " + std::to_string(device) + " (" + name + ")";
  if (cc != p.arch)
    return format("%s is compute capability %d.%d; this package's kernels are %s cubins, measured on %s: export "
                  "again from that GPU's records",
                  gpu.c_str(), cc / 10, cc % 10, p.arch_name, p.gpu);
  if (p.sms > 0 && sms != p.sms)
    return format("%s has %d SMs; this package's kernels were gated and timed with %lld (%s), and a persistent or "
                  "split-KV kernel's grid follows the SM count: export again from that GPU's records",
                  gpu.c_str(), sms, p.sms, p.gpu);
  return "";
}

EvoCall call_of(const evo_attn_call& c) {
  EvoCall out{};
  const evo_attn_tensor* t[4] = {&c.q, &c.k, &c.v, &c.o};
  for (int i = 0; i < 4; ++i) {
    out.tensor[i].data = t[i]->data;
    for (int d = 0; d < 4; ++d) out.tensor[i].size[d] = t[i]->size[d];
    for (int d = 0; d < 3; ++d) out.tensor[i].stride[d] = t[i]->stride[d];
  }
  out.causal = c.is_causal ? 1 : 0;
  out.scale = c.scale;
  out.descale[0] = c.q_descale;
  out.descale[1] = c.k_descale;
  out.descale[2] = c.v_descale;
  return out;
}

bool plan_call(const Package& p, const evo_attn_call& c, Plan& plan, std::string& error) {
  if (!check_dtype(p, c, error) || !check_sizes(c, error)) return false;
  const int task = find_task(p, c, error);
  if (task < 0) return false;
  for (int t = 0; t < 4; ++t)
    if (!check_layout(tensor(c, t), kTensor[t], t == 3 ? 2 : elem_bytes(c.dtype), error)) return false;
  if (!check_overlap(c, error) || !check_scalars(c, error)) return false;
  const int regime = evo_regime_of(p.rule, c.q.size[0], c.q.size[1], c.q.size[2]);
  const int kernel = p.tasks[task].kernel[regime];
  if (kernel < 0 || kernel >= p.kernel_count)
    return fail(error, format("package: task %s has no kernel for the %s regime (a damaged package_data.cpp)",
                              p.tasks[task].name, evo_regime_name(regime)));
  const Kernel& k = p.kernels[kernel];
  if (!check_extent(c, k, error)) return false;
  plan.task = task;
  plan.kernel = kernel;
  plan.regime = regime;
  plan.tiles = evo_tiles(k.launch, evo_call_shape(call_of(c)));
  return true;
}

}  // namespace evo_attn
