#!/usr/bin/env python3
"""Quick kernel-author loop on a GPU machine: compile one variant with NVRTC, run it on
random inputs over a few shapes, compare with PyTorch (float64 math), and time it.

This is a development aid, not the harness: `evo run` is the judge (isolation, gates,
honest timing). It uses only ctypes (libnvrtc, libcuda) and PyTorch.

  python3 scripts/devcheck.py variants/0-baseline/baseline.cu --task fp16-d64 \
      -D BLOCK_M=64 --shapes 1x8x8x512x512x64,2x8x2x1000x777x64 --layout bshd --time
"""
import argparse, ctypes, math, os, re, sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_lib(names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    sys.exit(f"devcheck: cannot load any of {names}")


def cuda_home():
    for c in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if c and os.path.isdir(os.path.join(c, "include")):
            return c
    sys.exit("devcheck: set CUDA_HOME to the CUDA toolkit")


def compile_variant(path, defines, arch):
    nvrtc = load_lib(["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"])
    src = open(path).read()
    head = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    full = head + f'#line 1 "{path}"\n' + src
    prog = ctypes.c_void_p()
    chk = lambda r, what: r == 0 or sys.exit(f"devcheck: {what} failed ({r})")
    chk(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), full.encode(), path.encode(), 0, None, None), "create")
    inc = os.path.join(cuda_home(), "include")
    opts = [f"--gpu-architecture={arch}", "-std=c++17", f"-I{ROOT}/variants/common", f"-I{inc}",
            f"-I{inc}/cccl", "--ptxas-options=-v", "-lineinfo"]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    print(log.value.decode(errors="replace").strip())
    if rc != 0:
        sys.exit("devcheck: compile failed")
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cubin = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    return cubin.raw


class Launch(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint) for n in ("threads", "smem_bytes", "rows_per_cta", "cluster_x", "persistent", "abi_version")]


class Params(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", ctypes.c_void_p),
                ("q_stride", ctypes.c_longlong * 3), ("k_stride", ctypes.c_longlong * 3),
                ("v_stride", ctypes.c_longlong * 3), ("o_stride", ctypes.c_longlong * 3),
                ("batch", ctypes.c_int), ("heads_q", ctypes.c_int), ("heads_kv", ctypes.c_int),
                ("seq_q", ctypes.c_int), ("seq_kv", ctypes.c_int), ("head_dim", ctypes.c_int),
                ("causal", ctypes.c_int), ("softmax_scale", ctypes.c_float), ("softmax_scale_log2", ctypes.c_float),
                ("q_descale", ctypes.c_float), ("k_descale", ctypes.c_float), ("v_descale", ctypes.c_float),
                ("flags", ctypes.c_uint), ("_pad", ctypes.c_byte * 12), ("tma", ctypes.c_ulonglong * 64)]


assert Params.tma.offset == 192 and ctypes.sizeof(Params) == 704, (Params.tma.offset, ctypes.sizeof(Params))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant")
    ap.add_argument("--task", default="fp16-d64")
    ap.add_argument("-D", action="append", default=[], help="tunable, NAME=VALUE")
    ap.add_argument("--shapes", default="1x8x8x512x512x64")
    ap.add_argument("--layout", default="bhsd", choices=["bhsd", "bshd"])
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--large-logits", action="store_true")
    a = ap.parse_args()
    m = re.fullmatch(r"(fp16|bf16)-d(64|128)(-causal)?", a.task) or sys.exit("bad --task")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[m[1]]
    D, causal = int(m[2]), bool(m[3])
    defines = {"EVO_DTYPE": 0 if m[1] == "fp16" else 1, "EVO_HEAD_DIM": D, "EVO_CAUSAL": int(causal)}
    for d in a.D:
        k, v = d.split("=")
        defines[k] = v
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # makes the primary context current
    cubin = compile_variant(a.variant, defines, a.arch)
    cu = load_lib(["libcuda.so.1"])
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    assert cu.cuModuleLoadData(ctypes.byref(mod), cubin) == 0
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"evo_attn_fwd") == 0
    gptr, gsize = ctypes.c_ulonglong(), ctypes.c_size_t()
    assert cu.cuModuleGetGlobal_v2(ctypes.byref(gptr), ctypes.byref(gsize), mod, b"evo_launch") == 0
    L = Launch()
    assert cu.cuMemcpyDtoH_v2(ctypes.byref(L), gptr, ctypes.sizeof(L)) == 0
    print(f"launch: threads={L.threads} smem={L.smem_bytes} rows={L.rows_per_cta} cluster={L.cluster_x} persistent={L.persistent}")
    if L.smem_bytes > 48 * 1024:
        assert cu.cuFuncSetAttribute(fn, 8, L.smem_bytes) == 0  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    worst = 0.0
    for shp in a.shapes.split(","):
        B, Hq, Hkv, Sq, Skv, Ds = map(int, shp.split("x"))
        assert Ds == D, f"shape head dim {Ds} != task {D}"
        g = torch.Generator(device="cuda").manual_seed(1234)
        sc = 3.0 if a.large_logits else 1.0
        def mk(H, S, s):
            shape = (B, S, H, D) if a.layout == "bshd" else (B, H, S, D)
            t = (torch.randn(shape, device="cuda", generator=g) * s).to(dtype)
            return t.transpose(1, 2) if a.layout == "bshd" else t  # logical BHSD view
        q, k, v = mk(Hq, Sq, sc), mk(Hkv, Skv, sc), mk(Hkv, Skv, 1.0)
        o = mk(Hq, Sq, 1.0)
        o.fill_(float("nan"))
        P = Params()
        P.q, P.k, P.v, P.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()
        for name, t in (("q_stride", q), ("k_stride", k), ("v_stride", v), ("o_stride", o)):
            st = t.stride()
            getattr(P, name)[:] = [st[0], st[1], st[2]]
            assert st[3] == 1
        P.batch, P.heads_q, P.heads_kv, P.seq_q, P.seq_kv, P.head_dim, P.causal = B, Hq, Hkv, Sq, Skv, D, int(causal)
        P.softmax_scale = 1.0 / math.sqrt(D)
        P.softmax_scale_log2 = P.softmax_scale * 1.4426950408889634
        P.q_descale = P.k_descale = P.v_descale = 1.0
        if L.persistent:
            tiles = -(-Sq // L.rows_per_cta) * Hq * B
            grid = (min(tiles, L.persistent * torch.cuda.get_device_properties(0).multi_processor_count), 1, 1)
        else:
            grid = (-(-Sq // L.rows_per_cta), Hq, B)
        pp = ctypes.c_void_p(ctypes.addressof(P))
        args = (ctypes.c_void_p * 1)(pp)
        stream = torch.cuda.current_stream().cuda_stream
        def launch():
            r = cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], L.threads, 1, 1, L.smem_bytes, ctypes.c_void_p(stream), args, None)
            assert r == 0, f"launch failed {r}"
        launch()
        torch.cuda.synchronize()
        qf, kf, vf = q.double(), k.double(), v.double()
        rep = Hq // Hkv
        kf, vf = kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1)
        s = (qf @ kf.transpose(-1, -2)) * P.softmax_scale
        if causal:
            s.masked_fill_(torch.ones(Sq, Skv, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
        ref = torch.softmax(s, -1) @ vf
        out = o.double()
        unwritten = torch.isnan(out).sum().item()
        err = (out - ref).abs().nan_to_num(float("inf"))
        rel_l2 = ((out - ref).norm() / ref.norm()).item()
        worst = max(worst, rel_l2 if unwritten == 0 else float("inf"))
        line = f"{shp} {a.layout}: max_abs={err.max().item():.3e} rel_l2={rel_l2:.3e} nan={unwritten}"
        if a.time:
            flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            ts = []
            for i in range(60):
                flush.zero_()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); launch(); e1.record(); torch.cuda.synchronize()
                if i >= 10:
                    ts.append(e0.elapsed_time(e1) * 1e3)
            ts.sort()
            med = ts[len(ts) // 2]
            flops = 4 * B * Hq * Sq * Skv * D * (0.5 if causal else 1.0)
            line += f" p50={med:.1f}us {flops / med / 1e6:.1f}TFLOPS"
        print(line, flush=True)
    ok = worst < (2e-2 if dtype == torch.bfloat16 else 5e-3)
    print("PASS" if ok else "FAIL", f"worst rel_l2={worst:.3e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
