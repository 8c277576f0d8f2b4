"""evo_attn: attention kernels evolved and gated by evo, exported with `evo export`.

    import evo_attn
    out = evo_attn.scaled_dot_product_attention(q, k, v, is_causal=True)   # or
    out = torch.ops.evo.attention(q, k, v, True, None)

q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D] (Hkv divides Hq), fp16, bf16 or float8_e4m3fn (with
q/k/v_descale; the output is bf16), any strides with a contiguous head dim, on a CUDA device of
the GPU the package was exported for. A call the package cannot run raises evo_attn.Unsupported
naming the argument, or with set_fallback(True) (EVO_ATTN_FALLBACK=sdpa) runs PyTorch SDPA with a
warning. docs/deploy.md in evo's repository has the details.
"""
from ._native import CudaError, Unsupported  # noqa: F401
from ._op import (attention, kernel_for, load, scaled_dot_product_attention, sdpa_swapped,  # noqa: F401
                  set_fallback)


def manifest():
    """The package's manifest.json (tasks, kernels, dispatch, evo's recorded times) as a dict."""
    import json
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "manifest.json"), os.path.join(here, "..", "..", "manifest.json")):
        if os.path.isfile(path):
            with open(path) as f:
                return json.load(f)
    raise FileNotFoundError("evo_attn: manifest.json is not beside the package")
