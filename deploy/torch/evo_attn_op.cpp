// torch.ops.evo.attention in C++: the op's eager call goes from PyTorch's dispatcher straight to
// evo_attn_forward(), with no Python frame, ctypes marshalling or Python custom-op dispatch per
// call (about 10 µs at the mission shape through the Python op, more than a short kernel). Built
// beside libevo_attn when CMake finds PyTorch (CMakeLists.txt); python/evo_attn loads it and
// keeps the Python op as the path without it. Semantics are the Python op's (python/evo_attn/_op.py):
// the same checks and messages, the output laid out as q is, SDPA with a warning per distinct
// reason for calls the package cannot run when fallback is true, ValueError (evo_attn.Unsupported's
// base) naming the argument otherwise.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "evo_attn.h"

namespace {

bool is_fp8(at::ScalarType t) { return t == at::ScalarType::Float8_e4m3fn; }

std::optional<int> dtype_code(at::ScalarType t) {
  if (t == at::ScalarType::Half) return EVO_ATTN_FP16;
  if (t == at::ScalarType::BFloat16) return EVO_ATTN_BF16;
  if (is_fp8(t)) return EVO_ATTN_FP8_E4M3;
  return std::nullopt;
}

std::string device_text(const at::Tensor& t) { return t.device().str(); }

// _check() of the Python op: types, devices and dims; the C library checks the rest.
std::string check(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const std::pair<const char*, const at::Tensor*> named[3] = {{"q", &q}, {"k", &k}, {"v", &v}};
  for (const auto& [name, t] : named) {
    if (t->dim() != 4)
      return std::string("evo_attn: ") + name + " has " + std::to_string(t->dim()) +
             " dims; expected 4 (batch, heads, seq, head_dim)";
    if (!t->is_cuda())
      return std::string("evo_attn: device: ") + name + " is on " + device_text(*t) + "; the kernels run on CUDA devices";
  }
  if (k.device() != q.device() || v.device() != q.device())
    return "evo_attn: device: q, k, v are on " + device_text(q) + ", " + device_text(k) + ", " + device_text(v) +
           "; they must share one";
  if (!dtype_code(q.scalar_type()))
    return std::string("evo_attn: dtype: ") + c10::toString(q.scalar_type()) +
           " is not float16, bfloat16 or float8_e4m3fn";
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    return std::string("evo_attn: dtype: q, k, v are ") + c10::toString(q.scalar_type()) + ", " +
           c10::toString(k.scalar_type()) + ", " + c10::toString(v.scalar_type()) + "; they must share one";
  return "";
}

at::ScalarType out_dtype(const at::Tensor& q) { return is_fp8(q.scalar_type()) ? at::kBFloat16 : q.scalar_type(); }

// [B, Hq, Sq, D] laid out as q is: BSHD-strided for BSHD input, else BHSD.
at::Tensor empty_out(const at::Tensor& q) {
  const auto opts = q.options().dtype(out_dtype(q));
  const int64_t b = q.size(0), h = q.size(1), s = q.size(2), d = q.size(3);
  if (q.stride(1) < q.stride(2)) return at::empty({b, s, h, d}, opts).transpose(1, 2);
  return at::empty({b, h, s, d}, opts);
}

evo_attn_tensor describe(const at::Tensor& t) {
  evo_attn_tensor d{};
  d.data = reinterpret_cast<uint64_t>(t.data_ptr());
  for (int i = 0; i < 4; ++i) {
    d.size[i] = t.size(i);
    d.stride[i] = t.stride(i);
  }
  return d;
}

void warn_once(const std::string& reason) {
  static std::mutex m;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(m);
  if (seen.insert(reason).second)
    TORCH_WARN(reason, "; falling back to torch.nn.functional.scaled_dot_product_attention");
}

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool is_causal,
                std::optional<double> scale, const double descale[3]) {
  if (is_fp8(q.scalar_type()) && q.dim() == 4) {  // dequantized, in the output's precision
    const at::Tensor dq = q.to(at::kBFloat16) * descale[0], dk = k.to(at::kBFloat16) * descale[1],
                     dv = v.to(at::kBFloat16) * descale[2];
    return at::scaled_dot_product_attention(dq, dk, dv, {}, 0.0, is_causal, scale, dq.size(1) != dk.size(1));
  }
  const bool gqa = q.dim() == 4 && k.dim() == 4 && q.size(1) != k.size(1);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, is_causal, scale, gqa);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool is_causal,
                     std::optional<double> scale, double q_descale, double k_descale, double v_descale,
                     bool fallback) {
  const double descale[3] = {q_descale, k_descale, v_descale};
  std::string why = check(q, k, v);
  if (why.empty()) {
    at::Tensor out = empty_out(q);
    evo_attn_call c{};
    c.q = describe(q);
    c.k = describe(k);
    c.v = describe(v);
    c.o = describe(out);
    c.dtype = *dtype_code(q.scalar_type());
    c.out_dtype = is_fp8(q.scalar_type()) ? EVO_ATTN_BF16 : c.dtype;
    c.is_causal = is_causal ? 1 : 0;
    c.scale = float(scale ? *scale : 1.0 / std::sqrt(double(q.size(3))));
    c.q_descale = float(q_descale);
    c.k_descale = float(k_descale);
    c.v_descale = float(v_descale);
    c.device = q.get_device();
    const c10::cuda::CUDAGuard guard(q.device());
    char message[512] = {};
    const int status =
        evo_attn_forward(&c, c10::cuda::getCurrentCUDAStream(q.get_device()).stream(), message, sizeof(message));
    if (status == EVO_ATTN_OK) return out;
    TORCH_CHECK(status == EVO_ATTN_UNSUPPORTED, message);  // a driver failure is never a fallback
    why = message;
  }
  TORCH_CHECK_VALUE(fallback, why);
  warn_once(why);
  const at::Tensor result = sdpa(q, k, v, is_causal, scale, descale);
  at::Tensor out = q.dim() == 4 ? empty_out(q) : at::empty_like(result);
  out.copy_(result);
  return out;
}

}  // namespace

// The schema of the Python op (python/evo_attn/_op.py); its fake (meta) implementation stays in
// Python, where torch.compile looks for it.
TORCH_LIBRARY(evo, m) {
  m.def(
      "attention(Tensor q, Tensor k, Tensor v, bool is_causal=False, float? scale=None, float q_descale=1.0, "
      "float k_descale=1.0, float v_descale=1.0, bool fallback=False) -> Tensor");
}

// CPU too, so a CPU tensor gets the op's message (or the fallback), not the dispatcher's.
TORCH_LIBRARY_IMPL(evo, CUDA, m) { m.impl("attention", &attention); }
TORCH_LIBRARY_IMPL(evo, CPU, m) { m.impl("attention", &attention); }
