"""cuDNN FP8 SDPA through the cuDNN frontend's Python graph API (`sdpa_fp8`), and the per-tensor
e4m3 quantization evo's worker applies to its inputs (harness/gpu/fp8_inputs.cpp):
scale = 448 / amax(x) in float32, x8 = e4m3(x * scale) saturated, descale = 1 / scale; the value
a kernel must treat x8 as is float(x8) * descale.

Used by scripts/peers_cudnn_fp8.py (timing) and scripts/calibrate_fp8.py (error). Needs PyTorch
with CUDA and the `nvidia-cudnn-frontend` wheel (the device has no PyPI: carry the wheel,
docs/fp8.md says how); the frontend loads the cuDNN that PyTorch ships.
"""
E4M3_MAX = 448.0
# P is in [0, 1]; cuDNN quantizes it to e4m3 as P * scale_s. 448 maps the row maximum (P = 1)
# to e4m3's largest value, the amax recipe applied to P.
P_SCALE = 448.0


def quantize(torch, x):
    """(e4m3 tensor, descale) for float tensor x, exactly as evo's worker: float32 arithmetic."""
    amax = x.abs().max().to(torch.float32)
    one = torch.ones((), dtype=torch.float32, device=x.device)
    scale = torch.where(amax > 0, torch.tensor(E4M3_MAX, dtype=torch.float32, device=x.device) / amax, one)
    q = (x.to(torch.float32) * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    descale = (one / scale).item()
    return q, descale


def dequantize(torch, q, descale):
    return q.to(torch.float64) * descale


class CudnnFp8Sdpa:
    """One cuDNN FP8 SDPA graph for fixed shapes, strides, mask and softmax scale. Q, K, V are
    e4m3 tensors shaped [B, H, S, D] (any strides, GQA allowed); O is bf16 when cuDNN accepts it
    on this GPU, else e4m3 with scale_o (see `out_dtype`)."""

    def __init__(self, torch, cudnn, q, k, v, causal, attn_scale, out_dtype="bf16", o_scale=1.0):
        self.torch, self.cudnn = torch, cudnn
        self.out_dtype = out_dtype
        dt = cudnn.data_type
        self.handle = cudnn.create_handle()
        cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)
        g = cudnn.pygraph(io_data_type=dt.FP8_E4M3, intermediate_data_type=dt.FLOAT, compute_data_type=dt.FLOAT,
                          handle=self.handle)
        tensors = [g.tensor(name=n, dim=list(x.shape), stride=list(x.stride()), data_type=dt.FP8_E4M3)
                   for n, x in (("Q", q), ("K", k), ("V", v))]
        scalars = [g.tensor(name=n, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=dt.FLOAT)
                   for n in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")]
        kwargs = dict(q=tensors[0], k=tensors[1], v=tensors[2], descale_q=scalars[0], descale_k=scalars[1],
                      descale_v=scalars[2], descale_s=scalars[3], scale_s=scalars[4], scale_o=scalars[5],
                      attn_scale=attn_scale, use_causal_mask=causal, name="sdpa_fp8")
        try:
            o, _, amax_s, amax_o = g.sdpa_fp8(generate_stats=False, **kwargs)
        except TypeError:  # frontends before generate_stats
            o, _, amax_s, amax_o = g.sdpa_fp8(is_inference=True, **kwargs)
        self.out = torch.empty_like(q, dtype=torch.bfloat16 if out_dtype == "bf16" else torch.float8_e4m3fn)
        o.set_output(True).set_dim(list(self.out.shape)).set_stride(list(self.out.stride())).set_data_type(
            dt.BFLOAT16 if out_dtype == "bf16" else dt.FP8_E4M3)
        for a in (amax_s, amax_o):
            a.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(dt.FLOAT)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        self.graph = g
        self.tensors, self.scalars, self.amax = tensors, scalars, (amax_s, amax_o)
        self.o_tensor = o
        self.o_scale = o_scale
        self.workspace = torch.empty(g.get_workspace_size(), dtype=torch.uint8, device=q.device)
        self.amax_buf = [torch.zeros(1, 1, 1, 1, dtype=torch.float32, device=q.device) for _ in range(2)]
        self.pack = None

    def bind(self, q, k, v, descales):
        """Inputs for the next calls: e4m3 tensors with the graph's shapes and strides, and their
        descales (q, k, v)."""
        torch = self.torch

        def scalar(x):
            return torch.full((1, 1, 1, 1), float(x), dtype=torch.float32, device=q.device)

        values = list(descales) + [1.0 / P_SCALE, P_SCALE, self.o_scale]
        self.scalar_bufs = [scalar(x) for x in values]
        self.inputs = (q, k, v)
        self.pack = {t: x for t, x in zip(self.tensors, self.inputs)}
        self.pack.update({t: x for t, x in zip(self.scalars, self.scalar_bufs)})
        self.pack[self.o_tensor] = self.out
        self.pack.update({t: x for t, x in zip(self.amax, self.amax_buf)})

    def __call__(self):
        # On the caller's current stream every time: the timer's events and a CUDA graph capture
        # (a side stream) must see the launch. A handle fixed to the stream it was built on left
        # the H200 run's graph capture empty (graph_us dropped from those records).
        self.cudnn.set_stream(handle=self.handle, stream=self.torch.cuda.current_stream().cuda_stream)
        self.graph.execute(self.pack, self.workspace, handle=self.handle)

    def output(self):
        """O as float64 values (e4m3 O: divided by scale_o)."""
        o = self.out.to(self.torch.float64)
        return o if self.out_dtype == "bf16" else o / self.o_scale


def build(torch, cudnn, q, k, v, causal, attn_scale, v_amax):
    """The graph with a bf16 O if cuDNN supports it here, else with an e4m3 O scaled so that
    |O| <= amax(V) (O is a convex combination of V's rows) lands inside e4m3's range. Returns
    (graph, None) or (None, the reasons it refused both)."""
    reasons = []
    for out_dtype, o_scale in (("bf16", 1.0), ("e4m3", E4M3_MAX / v_amax if v_amax > 0 else 1.0)):
        try:
            return CudnnFp8Sdpa(torch, cudnn, q, k, v, causal, attn_scale, out_dtype, o_scale), None
        except Exception as e:  # cudnnGraphNotSupportedError, RuntimeError: the frontend's refusals
            reasons.append("%s O: %s" % (out_dtype, " ".join(str(e).split())[:300]))
    return None, "; ".join(reasons)
