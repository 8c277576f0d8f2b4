"""The package's C library (libevo_attn, evo_attn.h) through ctypes; no PyTorch needed.

The library is looked for in $EVO_ATTN_LIBRARY, beside this file (an installed package), then in
<package>/build (a build tree). When none is there and the package's CMakeLists.txt is, it is
built once with CMake into <package>/build (docs/deploy.md).
"""
import ctypes
import os
import subprocess
import sys
import threading

FP16, BF16, FP8_E4M3 = 0, 1, 2
OK, UNSUPPORTED, CUDA_ERROR = 0, 1, 2
_LIB_NAME = "libevo_attn.so"
_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(os.path.dirname(_HERE))  # the exported folder (python/evo_attn/..)


class Unsupported(ValueError):
    """A call this package cannot run; the message names the argument to change."""


class CudaError(RuntimeError):
    """The driver failed (no driver, a launch error); the message names the call."""


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("size", ctypes.c_int64 * 4), ("stride", ctypes.c_int64 * 4)]


class Call(ctypes.Structure):
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("o", Tensor), ("dtype", ctypes.c_int),
                ("out_dtype", ctypes.c_int), ("is_causal", ctypes.c_int), ("scale", ctypes.c_float),
                ("q_descale", ctypes.c_float), ("k_descale", ctypes.c_float), ("v_descale", ctypes.c_float),
                ("device", ctypes.c_int)]


class Plan(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_int), ("regime", ctypes.c_int), ("task", ctypes.c_char_p),
                ("threads", ctypes.c_uint), ("smem_bytes", ctypes.c_uint), ("rows_per_cta", ctypes.c_uint),
                ("cluster_x", ctypes.c_uint), ("persistent", ctypes.c_uint), ("tiles", ctypes.c_int64)]


def tensor(data, size, stride):
    """A tensor description: a device address, 4 sizes and 4 strides (elements) in BHSD order."""
    if len(size) != 4 or len(stride) != 4:
        raise Unsupported("evo_attn: tensors must have 4 dims (batch, heads, seq, head_dim)")
    return Tensor(int(data), (ctypes.c_int64 * 4)(*[int(s) for s in size]),
                  (ctypes.c_int64 * 4)(*[int(s) for s in stride]))


def call(q, k, v, o, dtype, is_causal, scale, device, descales=(1.0, 1.0, 1.0)):
    out_dtype = BF16 if dtype == FP8_E4M3 else dtype
    return Call(q, k, v, o, dtype, out_dtype, 1 if is_causal else 0, float(scale), float(descales[0]),
                float(descales[1]), float(descales[2]), int(device))


def _build(package):
    build = os.path.join(package, "build")
    print("evo_attn: building %s with CMake (once)" % _LIB_NAME, file=sys.stderr)
    for cmd in (["cmake", "-S", package, "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", build, "-j", str(os.cpu_count() or 2)]):
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            raise ImportError("evo_attn: building the library failed (%s):\n%s" % (" ".join(cmd), done.stdout[-2000:]))
    return os.path.join(build, _LIB_NAME)


def library_path(package=_PACKAGE, build=True):
    env = os.environ.get("EVO_ATTN_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise ImportError("evo_attn: EVO_ATTN_LIBRARY=%s is not a file" % env)
        return env
    for candidate in (os.path.join(_HERE, _LIB_NAME), os.path.join(package, "build", _LIB_NAME)):
        if os.path.isfile(candidate):
            return candidate
    if build and os.path.isfile(os.path.join(package, "CMakeLists.txt")):
        return _build(package)
    raise ImportError("evo_attn: %s not found: build it with `cmake -S %s -B %s/build && cmake --build %s/build`, "
                      "or set EVO_ATTN_LIBRARY" % (_LIB_NAME, package, package, package))


class Library:
    """libevo_attn's functions, raising Unsupported or CudaError with the library's message."""

    def __init__(self, path):
        self.path = path
        lib = ctypes.CDLL(path)
        msg = [ctypes.c_char_p, ctypes.c_size_t]
        lib.evo_attn_plan_call.argtypes = [ctypes.POINTER(Call), ctypes.POINTER(Plan)] + msg
        lib.evo_attn_forward.argtypes = [ctypes.POINTER(Call), ctypes.c_void_p] + msg
        lib.evo_attn_load.argtypes = [ctypes.c_int] + msg
        for name in ("evo_attn_package_gpu", "evo_attn_tasks", "evo_attn_kernel_name", "evo_attn_kernel_label",
                     "evo_attn_regime_name"):
            getattr(lib, name).restype = ctypes.c_char_p
        lib.evo_attn_kernel_name.argtypes = [ctypes.c_int]
        lib.evo_attn_kernel_label.argtypes = [ctypes.c_int]
        lib.evo_attn_regime_name.argtypes = [ctypes.c_int]
        if lib.evo_attn_api_version() != 1:
            raise ImportError("evo_attn: %s has API version %d; this package reads 1" % (path, lib.evo_attn_api_version()))
        self.lib = lib
        self.lock = threading.Lock()

    @staticmethod
    def _raise(status, buf):
        text = buf.value.decode(errors="replace")
        if status == UNSUPPORTED:
            raise Unsupported(text)
        raise CudaError(text)

    def plan(self, c):
        p, buf = Plan(), ctypes.create_string_buffer(512)
        status = self.lib.evo_attn_plan_call(ctypes.byref(c), ctypes.byref(p), buf, len(buf))
        if status != OK:
            self._raise(status, buf)
        return p

    def forward(self, c, stream):
        buf = ctypes.create_string_buffer(512)
        status = self.lib.evo_attn_forward(ctypes.byref(c), ctypes.c_void_p(int(stream) or None), buf, len(buf))
        if status != OK:
            self._raise(status, buf)

    def load(self, device):
        buf = ctypes.create_string_buffer(512)
        status = self.lib.evo_attn_load(int(device), buf, len(buf))
        if status != OK:
            self._raise(status, buf)

    def gpu(self):
        return self.lib.evo_attn_package_gpu().decode()

    def arch(self):
        return self.lib.evo_attn_package_arch()

    def tasks(self):
        return self.lib.evo_attn_tasks().decode().split(",")

    def regime_name(self, regime):
        """A regime number's name (decode, short, batched-short, long), as the library gives it."""
        return self.lib.evo_attn_regime_name(int(regime)).decode()

    def kernels(self):
        return [(self.lib.evo_attn_kernel_name(i).decode(), self.lib.evo_attn_kernel_label(i).decode())
                for i in range(self.lib.evo_attn_kernel_count())]


_library = None
_library_lock = threading.Lock()


def library():
    """The process's Library (loaded, or built then loaded, on first use)."""
    global _library
    with _library_lock:
        if _library is None:
            _library = Library(library_path())
        return _library
