#!/usr/bin/env python3
"""An exported package's C library through its Python binding (python/evo_attn/_native.py), without
PyTorch or a GPU: the dispatch agrees with manifest.json, and every refused call names its argument.

Usage: EVO_ATTN_LIBRARY=<pkg>/build/libevo_attn.so python3 tests/deploy/test_native.py <pkg>
(tests/nvrtc/export_test.cpp runs it after `evo export` and a CMake build of the package.)
"""
import importlib.util
import json
import os
import sys
import unittest

PACKAGE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("EVO_ATTN_PACKAGE", "")
spec = importlib.util.spec_from_file_location("evo_attn_native", os.path.join(PACKAGE, "python", "evo_attn",
                                                                               "_native.py"))
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)

DTYPES = {"fp16": native.FP16, "bf16": native.BF16, "fp8": native.FP8_E4M3}
# One shape per regime (B, Hq, Hkv, Sq, Skv), under the default rule (core/regime.h).
REGIME_SHAPES = {"decode": (64, 32, 8, 1, 2048), "short": (1, 8, 8, 512, 512),
                 "batched-short": (32, 32, 32, 512, 512), "long": (2, 32, 8, 4096, 4096)}
GAP = 1 << 36  # bytes between the fake tensors' addresses: no overlaps


def bhsd(addr, b, h, s, d):
    return native.tensor(addr, (b, h, s, d), (h * s * d, s * d, d, 1))


def bshd(addr, b, h, s, d):
    return native.tensor(addr, (b, h, s, d), (s * h * d, d, h * d, 1))


def make_call(task, shape, head_dim=None, q_layout=bhsd):
    dtype, d, causal = task
    d = head_dim or d
    b, hq, hkv, sq, skv = shape
    base = 1 << 40
    return native.call(q_layout(base, b, hq, sq, d), bshd(base + GAP, b, hkv, skv, d),
                       bhsd(base + 2 * GAP, b, hkv, skv, d), bhsd(base + 3 * GAP, b, hq, sq, d), DTYPES[dtype],
                       causal, d ** -0.5, 0)


def parse_task(name):
    parts = name.split("-")
    return parts[0], int(parts[1][1:]), len(parts) > 2


class Native(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(PACKAGE, "manifest.json")) as f:
            cls.manifest = json.load(f)
        cls.lib = native.Library(native.library_path(PACKAGE, build=False))

    def test_package_identity(self):
        self.assertEqual(self.lib.tasks(), [t["task"] for t in self.manifest["tasks"]])
        self.assertEqual([n for n, _ in self.lib.kernels()], [k["name"] for k in self.manifest["kernels"]])
        self.assertEqual(self.lib.gpu(), self.manifest["gpu"])
        self.assertEqual(self.lib.arch(), int(self.manifest["arch"][3:5]))

    def test_dispatch_follows_the_manifest(self):
        names = [n for n, _ in self.lib.kernels()]
        for t in self.manifest["tasks"]:
            for regime, shape in REGIME_SHAPES.items():
                plan = self.lib.plan(make_call(parse_task(t["task"]), shape))
                self.assertEqual(self.lib.regime_name(plan.regime), regime)
                self.assertEqual(plan.task.decode(), t["task"])
                self.assertEqual(names[plan.kernel], t["dispatch"][regime]["kernel"], (t["task"], regime))
            # BSHD queries and MQA dispatch the same way.
            plan = self.lib.plan(make_call(parse_task(t["task"]), (2, 16, 1, 77, 1000), q_layout=bshd))
            self.assertEqual(names[plan.kernel], t["dispatch"]["short"]["kernel"])

    def refusal(self, call):
        with self.assertRaises(native.Unsupported) as cm:
            self.lib.plan(call)
        return str(cm.exception)

    def test_refusals_name_the_argument(self):
        task = parse_task(self.manifest["tasks"][0]["task"])
        self.assertIn("evo_attn: head_dim: q.size(3) = 96", self.refusal(make_call(task, (1, 8, 8, 64, 64), 96)))
        c = make_call(task, (1, 8, 8, 64, 64))
        c.q.stride[3] = 2
        self.assertIn("q.stride(3) = 2: the head dim must be contiguous", self.refusal(c))
        c = make_call(task, (1, 8, 8, 64, 64))
        c.k.data += 8
        self.assertIn("k.data_ptr()", self.refusal(c))
        c = make_call(task, (1, 8, 8, 64, 64))
        c.scale = -1.0
        self.assertIn("scale = -1", self.refusal(c))
        c = make_call(task, (1, 8, 8, 64, 64))
        c.device = -1
        self.assertIn("device = -1", self.refusal(c))
        c = make_call(task, (1, 8, 3, 64, 64))
        self.assertIn("k.size(1) = 3 does not divide q.size(1) = 8", self.refusal(c))
        # The op's input domain (kernels/evo_domain.h): its bound is taken, one past it refused.
        self.lib.plan(make_call(task, (1, 8, 8, 1, 131072)))
        self.assertIn("k.size(2) = 131073: the sequence length must be in [1, 131072]",
                      self.refusal(make_call(task, (1, 8, 8, 1, 131073))))
        c = make_call(task, (1, 8, 8, 64, 64))
        c.scale = 1.5
        self.assertIn("scale = 1.5: the softmax scale must be in (0, 1]", self.refusal(c))
        missing = [d for d in DTYPES if not any(t["task"].startswith(d + "-") for t in self.manifest["tasks"])]
        if missing:
            self.assertIn("dtype: ", self.refusal(make_call((missing[0], task[1], task[2]), (1, 8, 8, 64, 64))))
        names = {t["task"] for t in self.manifest["tasks"]}
        flipped = "%s-d%d%s" % (task[0], task[1], "" if task[2] else "-causal")
        if flipped not in names:
            self.assertIn("is_causal: ", self.refusal(make_call((task[0], task[1], not task[2]), (1, 8, 8, 64, 64))))
        with self.assertRaises(native.Unsupported):
            native.tensor(0, (1, 2, 3), (6, 3, 1))

    def test_forward_without_a_gpu_says_why(self):
        if os.path.exists("/dev/nvidia0"):
            self.skipTest("a GPU is present: the GPU script runs the op")
        task = parse_task(self.manifest["tasks"][0]["task"])
        with self.assertRaises(native.CudaError) as cm:
            self.lib.forward(make_call(task, (1, 8, 8, 64, 64)), 0)
        self.assertIn("evo_attn: ", str(cm.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
