"""The PyTorch custom op `torch.ops.evo.attention` over libevo_attn, and an SDPA-shaped wrapper."""
import contextlib
import math
import os
import warnings
from typing import Optional

import torch
import torch.nn.functional as F

from . import _native

Unsupported = _native.Unsupported
CudaError = _native.CudaError
_SDPA = F.scaled_dot_product_attention  # PyTorch's own, also while sdpa_swapped() replaces it

_FP8 = getattr(torch, "float8_e4m3fn", None)
_CODES = {torch.float16: _native.FP16, torch.bfloat16: _native.BF16}
if _FP8 is not None:
    _CODES[_FP8] = _native.FP8_E4M3
_fallback = os.environ.get("EVO_ATTN_FALLBACK", "").lower() == "sdpa"
_warned = set()


def set_fallback(enabled):
    """Opt in (True) or out (False, the default) of running PyTorch SDPA for calls this package
    cannot run, with a warning per distinct reason; EVO_ATTN_FALLBACK=sdpa sets it at import."""
    global _fallback
    _fallback = bool(enabled)


def _warn_once(reason, stacklevel=3):
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn("%s; falling back to torch.nn.functional.scaled_dot_product_attention" % reason,
                      stacklevel=stacklevel)


def _check(q, k, v, attn_mask=None, dropout_p=0.0):
    """What the op needs of its arguments' types, devices and dims (no values, so torch.compile
    traces it); the C library checks the rest (head dim, strides, alignment, GPU)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise Unsupported("evo_attn: %s is not a tensor" % name)
        if t.dim() != 4:
            raise Unsupported("evo_attn: %s has %d dims; expected 4 (batch, heads, seq, head_dim)" % (name, t.dim()))
        if t.device.type != "cuda":
            raise Unsupported("evo_attn: device: %s is on %s; the kernels run on CUDA devices" % (name, t.device))
    if k.device != q.device or v.device != q.device:
        raise Unsupported("evo_attn: device: q, k, v are on %s, %s, %s; they must share one" % (q.device, k.device,
                                                                                                v.device))
    if q.dtype not in _CODES:
        raise Unsupported("evo_attn: dtype: %s is not float16, bfloat16 or float8_e4m3fn" % q.dtype)
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise Unsupported("evo_attn: dtype: q, k, v are %s, %s, %s; they must share one" % (q.dtype, k.dtype, v.dtype))
    if attn_mask is not None:
        raise Unsupported("evo_attn: attn_mask: only the causal mask (is_causal=True) is supported")
    if dropout_p:
        raise Unsupported("evo_attn: dropout_p = %g: inference only (0)" % dropout_p)


def _out_dtype(q):
    return torch.bfloat16 if q.dtype == _FP8 else q.dtype


def _empty_out(q):
    """The output [B, Hq, Sq, D], laid out as q is (BSHD-strided for BSHD input, else BHSD)."""
    b, h, s, d = q.shape
    if q.stride(1) < q.stride(2):
        return torch.empty((b, s, h, d), dtype=_out_dtype(q), device=q.device).transpose(1, 2)
    return torch.empty((b, h, s, d), dtype=_out_dtype(q), device=q.device)


def _desc(t):
    return _native.tensor(t.data_ptr(), t.shape, t.stride())


def _call(q, k, v, out, is_causal, scale, descales):
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    return _native.call(_desc(q), _desc(k), _desc(v), _desc(out), _CODES[q.dtype], is_causal, scale,
                        q.device.index, descales)


def _sdpa(q, k, v, is_causal, scale, descales):
    if q.dtype == _FP8:  # dequantized, in the output's precision
        q, k, v = (t.to(torch.bfloat16) * d for t, d in zip((q, k, v), descales))
    return _SDPA(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=q.size(1) != k.size(1))


def _sdpa_fallback(reason, q, k, v, is_causal, scale, descales):
    """SDPA for a call the package refused (`reason`), with the warning, into an output laid out as
    the op's would be."""
    _warn_once(reason, stacklevel=4)  # as from attention itself: its caller
    result = _sdpa(q, k, v, is_causal, scale, descales)
    out = _empty_out(q) if q.dim() == 4 else torch.empty_like(result)
    out.copy_(result)
    return out


def _load_cpp_op():
    """libevo_attn_torch (torch/evo_attn_op.cpp of the package), the op in C++, when CMake built it
    beside libevo_attn (PyTorch found at build time). EVO_ATTN_PYTHON_OP=1 keeps the Python op."""
    if os.environ.get("EVO_ATTN_PYTHON_OP") == "1":
        return False
    lib = _native.library()  # first: the C++ op links against this very library
    path = os.path.join(os.path.dirname(lib.path), "libevo_attn_torch.so")
    if not os.path.isfile(path):
        return False
    torch.ops.load_library(path)
    return True


CPP_OP = _load_cpp_op()

if CPP_OP:
    def attention(q, k, v, is_causal=False, scale=None, q_descale=1.0, k_descale=1.0, v_descale=1.0,
                  fallback=False):
        """softmax(scale * q k^T [causal]) v with evo's kernel for the call's task and shape regime,
        on the current stream (torch.ops.evo.attention, in C++). fallback=True runs SDPA (with a
        warning) for calls the package cannot run; otherwise they raise Unsupported naming the
        argument (torch.ops.evo.attention itself raises its base, ValueError)."""
        # Eager, the fallback runs here: a C++ op's TORCH_WARN reaches stderr, not Python's warnings,
        # when called through torch.ops (pytorch/pytorch#193451), so a caller could not catch or
        # filter it. A traced call keeps the fallback inside the op, where the graph has it.
        eager_fallback = fallback and not torch.compiler.is_compiling()
        try:
            return torch.ops.evo.attention(q, k, v, is_causal, scale, q_descale, k_descale, v_descale,
                                           fallback and not eager_fallback)
        except ValueError as e:
            if eager_fallback:
                return _sdpa_fallback(str(e), q, k, v, is_causal, scale, (q_descale, k_descale, v_descale))
            if isinstance(e, Unsupported):
                raise
            raise Unsupported(str(e)) from None
        except RuntimeError as e:
            if "evo_attn:" in str(e):
                raise CudaError(str(e)) from None
            raise

    _register_fake = torch.library.register_fake("evo::attention")
else:
    @torch.library.custom_op("evo::attention", mutates_args=())
    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False,
                  scale: Optional[float] = None, q_descale: float = 1.0, k_descale: float = 1.0,
                  v_descale: float = 1.0, fallback: bool = False) -> torch.Tensor:
        """softmax(scale * q k^T [causal]) v with evo's kernel for the call's task and shape regime,
        on the current stream. fallback=True runs SDPA (with a warning) for calls the package cannot
        run; otherwise they raise Unsupported naming the argument."""
        descales = (q_descale, k_descale, v_descale)
        try:
            _check(q, k, v)
            out = _empty_out(q)
            _native.library().forward(_call(q, k, v, out, is_causal, scale, descales),
                                      torch.cuda.current_stream(q.device).cuda_stream)
            return out
        except Unsupported as e:
            if not fallback:
                raise
            return _sdpa_fallback(str(e), q, k, v, is_causal, scale, descales)


    _register_fake = attention.register_fake


@_register_fake
def _(q, k, v, is_causal=False, scale=None, q_descale=1.0, k_descale=1.0, v_descale=1.0, fallback=False):
    if not fallback:
        _check(q, k, v)
    return _empty_out(q)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, q_descale=1.0, k_descale=1.0, v_descale=1.0, fallback=None):
    """torch.nn.functional.scaled_dot_product_attention's signature over the op (GQA/MQA need no
    enable_gqa here). fallback: None follows set_fallback()."""
    fallback = _fallback if fallback is None else bool(fallback)
    try:
        _check(query, key, value, attn_mask, dropout_p)
    except Unsupported as e:
        if not fallback:
            raise
        _warn_once(str(e))
        return _SDPA(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    return attention(query, key, value, is_causal, scale, q_descale, k_descale, v_descale, fallback)


@contextlib.contextmanager
def sdpa_swapped(fallback=True):
    """Within the block, torch.nn.functional.scaled_dot_product_attention runs this package's op, so
    a model that calls it runs evo's kernels unchanged; calls the package cannot run go to SDPA
    with a warning (fallback=True) or raise Unsupported."""
    def swapped(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                                            fallback=fallback)

    F.scaled_dot_product_attention = swapped
    try:
        yield
    finally:
        F.scaled_dot_product_attention = _SDPA


def load(device=None):
    """Loads the package's kernels on a device (the current one by default), e.g. before
    capturing a CUDA graph; the first call on a device does it otherwise."""
    if device is None:
        index = torch.cuda.current_device()
    elif isinstance(device, int):
        index = device
    else:
        index = torch.device(device).index
    _native.library().load(index)


def kernel_for(q, k, v, is_causal=False, scale=None, q_descale=1.0, k_descale=1.0, v_descale=1.0):
    """The kernel a call would run: {"kernel", "label", "regime", "task"}; raises Unsupported."""
    _check(q, k, v)
    o = _native.tensor(_aligned_after(q, k, v), q.shape, _bhsd_strides(q.shape))
    c = _native.call(_desc(q), _desc(k), _desc(v), o, _CODES[q.dtype], is_causal,
                     1.0 / math.sqrt(q.size(-1)) if scale is None else scale, q.device.index,
                     (q_descale, k_descale, v_descale))
    lib = _native.library()
    p = lib.plan(c)
    name, label = lib.kernels()[p.kernel]
    return {"kernel": name, "label": label, "regime": lib.regime_name(p.regime), "task": p.task.decode()}


def _bhsd_strides(shape):
    b, h, s, d = shape
    return (h * s * d, s * d, d, 1)


def _aligned_after(*tensors):
    """An address past every input (the plan's overlap check), 256-byte aligned; never used."""
    # A view's bytes reach as far as its strides do, not numel() elements past its start.
    end = max(t.data_ptr() + (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))) * t.element_size()
              for t in tensors)
    return (end + (1 << 20) + 255) // 256 * 256
