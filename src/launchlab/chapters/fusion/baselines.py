"""Library softmax baselines as Targets on our buffers and our stream: cuDNN (C API through ctypes),
PyTorch's torch.softmax, and a Triton kernel of our own.

Each is a `Target` (gpu/targets.py) named `cudnn`, `torch` or `triton`: it reads the CuPy input
buffer it is given (shared with the chapter's other contenders), writes an output buffer of its
own, and enqueues one plain softmax over the rows on the CuPy stream without waiting (`invoke`).
Every call goes to that stream, so a CuPy stream capture records it: cuDNN through
cudnnSetStream, torch and Triton through PyTorch's current stream set to
`torch.cuda.ExternalStream(stream.ptr)`. A library is used only where it loads on this host:
`make_baseline` returns the target or, where it cannot be set up, the reason, which the chapter
records in place of a measurement. `version()` is what the run records with `session.library`.
Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import cupy

from launchlab.gpu.targets import ArrayTarget

NAMES = ("cudnn", "torch", "triton")


class BaselineUnavailable(RuntimeError):
    """The library is not installed, does not load, or cannot run here."""


class LibrarySoftmax(ArrayTarget):
    """A library's plain softmax over the rows of `x` (a C-contiguous float32 CuPy matrix, shared with
    the other contenders) into an output buffer of its own. Subclasses set `name` and `invoke`."""

    def __init__(self, x):
        if x.ndim != 2 or x.dtype != cupy.float32 or not x.flags.c_contiguous:
            raise BaselineUnavailable(f"x must be a C-contiguous float32 matrix, not {x.dtype}{x.shape}")
        self.x, self.y = x, cupy.empty_like(x)
        self.rows, self.cols = x.shape

    def version(self) -> str:
        raise NotImplementedError

    def describe(self) -> dict:
        raise NotImplementedError


# ---------------------------------------------------------------- cuDNN
CUDNN_STATUS_SUCCESS = 0
CUDNN_SOFTMAX_ACCURATE = 1       # cudnnSoftmaxAlgorithm_t: subtract the max before exp
CUDNN_SOFTMAX_MODE_INSTANCE = 0  # cudnnSoftmaxMode_t: over C*H*W for each n
CUDNN_TENSOR_NCHW = 0
CUDNN_DATA_FLOAT = 0
CUDNN_LIBRARY = "libcudnn.so.9"
CUDNN_SYSTEM_PATH = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"


def _cudnn_candidates() -> list[str]:
    """The loader's own search first (it finds a copy already loaded, e.g. PyTorch's), then
    the system path, then the nvidia-cudnn wheel's library folder."""
    candidates = [CUDNN_LIBRARY, CUDNN_SYSTEM_PATH]
    try:
        spec = importlib.util.find_spec("nvidia.cudnn")
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidates.append(str(Path(folder) / "lib" / CUDNN_LIBRARY))
    return candidates


def _loaded_path(fragment: str) -> str | None:
    """Which file the process actually mapped (from /proc/self/maps)."""
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            if fragment in line and "/" in line:
                return line[line.index("/"):]
    except OSError:
        pass
    return None


class _Cudnn:
    """The few cuDNN C functions the baseline calls, typed once."""

    def __init__(self):
        try:  # PyTorch links a cuDNN of its own: load it first, so that one copy serves both
            import torch  # noqa: F401
        except Exception:
            pass
        errors = []
        for candidate in _cudnn_candidates():
            try:
                self.library = ctypes.CDLL(candidate)
                break
            except OSError as error:
                errors.append(f"{candidate}: {error}")
        else:
            raise BaselineUnavailable("cuDNN could not be loaded: " + "; ".join(errors))
        lib = self.library
        void_p, c_int = ctypes.c_void_p, ctypes.c_int
        signatures = {
            "cudnnGetVersion": (ctypes.c_size_t, []),
            "cudnnGetErrorString": (ctypes.c_char_p, [c_int]),
            "cudnnCreate": (c_int, [ctypes.POINTER(void_p)]),
            "cudnnSetStream": (c_int, [void_p, void_p]),
            "cudnnCreateTensorDescriptor": (c_int, [ctypes.POINTER(void_p)]),
            "cudnnSetTensor4dDescriptor": (c_int, [void_p, c_int, c_int, c_int, c_int, c_int, c_int]),
            "cudnnSoftmaxForward": (c_int, [void_p, c_int, c_int, void_p, void_p, void_p, void_p, void_p, void_p]),
        }
        for name, (restype, argtypes) in signatures.items():
            try:
                function = getattr(lib, name)
            except AttributeError:
                raise BaselineUnavailable(f"cuDNN library has no symbol {name}") from None
            function.restype, function.argtypes = restype, argtypes
        self.version = int(lib.cudnnGetVersion())
        self.path = _loaded_path("libcudnn.so")

    def check(self, status: int, what: str) -> None:
        if status != CUDNN_STATUS_SUCCESS:
            message = self.library.cudnnGetErrorString(status)
            raise RuntimeError(f"{what} returned {status} ({message.decode() if message else 'unknown'})")


_CUDNN: _Cudnn | None = None


def cudnn_version_text(version: int) -> str:
    """cudnnGetVersion() as major.minor.patch: 9.x encodes 10000 major + 100 minor + patch, 8.x 1000 major + 100 minor + patch."""
    if version >= 90000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


_CUDNN_HANDLES: dict = {}  # one cuDNN handle per stream, made once: cudnnCreate takes far longer than a call


def _cudnn_handle(api, stream):
    if stream.ptr not in _CUDNN_HANDLES:
        handle = ctypes.c_void_p()
        api.check(api.library.cudnnCreate(ctypes.byref(handle)), "cudnnCreate")
        api.check(api.library.cudnnSetStream(handle, ctypes.c_void_p(stream.ptr)), "cudnnSetStream")
        _CUDNN_HANDLES[stream.ptr] = handle
    return _CUDNN_HANDLES[stream.ptr]


class CudnnSoftmax(LibrarySoftmax):
    """cudnnSoftmaxForward(ACCURATE, MODE_INSTANCE) on an NCHW tensor n = rows, c = cols, h = w = 1,
    its handle bound to our stream with cudnnSetStream (so a capture of that stream records it)."""

    name = "cudnn"

    def __init__(self, x, stream):
        global _CUDNN
        super().__init__(x)
        _CUDNN = _CUDNN or _Cudnn()
        self.api = _CUDNN
        rows, cols, y = self.rows, self.cols, self.y
        handle, descriptor = _cudnn_handle(self.api, stream), ctypes.c_void_p()
        self.api.check(self.api.library.cudnnCreateTensorDescriptor(ctypes.byref(descriptor)), "cudnnCreateTensorDescriptor")
        self.api.check(self.api.library.cudnnSetTensor4dDescriptor(descriptor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                                   rows, cols, 1, 1), "cudnnSetTensor4dDescriptor")
        self.alpha, self.beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.forward = self.api.library.cudnnSoftmaxForward
        self.args = (handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                     ctypes.cast(ctypes.pointer(self.alpha), ctypes.c_void_p), descriptor, ctypes.c_void_p(x.data.ptr),
                     ctypes.cast(ctypes.pointer(self.beta), ctypes.c_void_p), descriptor, ctypes.c_void_p(y.data.ptr))

    def invoke(self) -> None:
        status = self.forward(*self.args)
        if status:
            self.api.check(status, "cudnnSoftmaxForward")

    def version(self) -> str:
        return cudnn_version_text(self.api.version)

    def describe(self) -> dict:
        return {"library": self.api.path, "cudnn_version": self.api.version,
                "call": "cudnnSoftmaxForward(CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE), NCHW n=rows c=cols h=w=1"}


# ---------------------------------------------------------------- PyTorch
def _torch_on_stream(stream):
    """PyTorch, with its current stream set to ours (so torch and Triton launch on it)."""
    try:
        import torch
    except Exception as error:
        raise BaselineUnavailable(f"PyTorch cannot be imported ({type(error).__name__}: {error})") from None
    if not torch.cuda.is_available():
        raise BaselineUnavailable("PyTorch sees no CUDA device")
    external = torch.cuda.ExternalStream(stream.ptr)
    torch.cuda.set_stream(external)
    if torch.cuda.current_stream().cuda_stream != stream.ptr:
        raise BaselineUnavailable("PyTorch's current stream could not be set to the CuPy stream")
    return torch, external


def _shared_tensor(torch, array):
    tensor = torch.from_dlpack(array)
    if tensor.data_ptr() != array.data.ptr:
        raise BaselineUnavailable("DLPack gave PyTorch a copy instead of the CuPy buffer")
    return tensor


class TorchSoftmax(LibrarySoftmax):
    """torch.softmax over dim 1 into our output buffer, on our memory (DLPack) and stream."""

    name = "torch"

    def __init__(self, x, stream):
        super().__init__(x)
        self.torch, self.external = _torch_on_stream(stream)
        self.xt, self.yt = _shared_tensor(self.torch, self.x), _shared_tensor(self.torch, self.y)
        torch = self.torch
        try:  # softmax with out= keeps the output in our buffer; older builds lack it
            torch.softmax(self.xt, 1, out=self.yt)
            self.call = "torch.softmax(x, 1, out=y)"
            self.function = lambda: torch.softmax(self.xt, 1, out=self.yt)
        except (TypeError, RuntimeError):
            self.call = "torch.ops.aten._softmax.out(x, 1, False, out=y)"
            self.function = lambda: torch.ops.aten._softmax.out(self.xt, 1, False, out=self.yt)
        cupy.cuda.get_current_stream().synchronize()

    def invoke(self) -> None:
        self.function()

    def version(self) -> str:
        return str(self.torch.__version__)

    def describe(self) -> dict:
        return {"torch_version": self.torch.__version__, "call": self.call,
                "cuda_runtime": self.torch.version.cuda, "cudnn_version_in_torch": self.torch.backends.cudnn.version()}


# ---------------------------------------------------------------- Triton (our own kernels)
try:
    import triton
    import triton.language as tl
    TRITON_IMPORT_ERROR = None
except Exception as _error:  # not installed, or broken: the baseline is skipped with this note
    triton = tl = None
    TRITON_IMPORT_ERROR = f"{type(_error).__name__}: {_error}"

TRITON_RESIDENT_LIMIT = 16384  # longest power-of-two row held in registers by one program
TRITON_LOOP_BLOCK = 4096

if triton is not None:
    @triton.jit
    def softmax_row_resident(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
        # One program per row: read the row once into registers (cols x 4 bytes),
        # write it once (cols x 4 bytes); max, exp and sum never leave the chip.
        row = tl.program_id(0).to(tl.int64)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def softmax_row_looped(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
        # Rows longer than a program holds: pass 1 reads the row once keeping a running max
        # and sum per lane; pass 2 reads it again and writes y (2 reads, 1 write per element).
        # Called only with cols >= BLOCK, so every lane sees a finite value in the first step.
        row = tl.program_id(0).to(tl.int64)
        offsets = tl.arange(0, BLOCK)
        lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
        lane_sum = tl.zeros([BLOCK], tl.float32)
        for start in range(0, cols, BLOCK):
            mask = start + offsets < cols
            x = tl.load(x_ptr + row * cols + start + offsets, mask=mask, other=-float("inf"))
            grown = tl.maximum(lane_max, x)
            lane_sum = lane_sum * tl.exp(lane_max - grown) + tl.exp(x - grown)
            lane_max = grown
        row_max = tl.max(lane_max, axis=0)
        row_sum = tl.sum(lane_sum * tl.exp(lane_max - row_max), axis=0)
        for start in range(0, cols, BLOCK):
            mask = start + offsets < cols
            x = tl.load(x_ptr + row * cols + start + offsets, mask=mask, other=-float("inf"))
            tl.store(y_ptr + row * cols + start + offsets, tl.exp(x - row_max) / row_sum, mask=mask)


def triton_launch_shape(cols: int) -> dict:
    """Which Triton kernel, block and warps a row length gets."""
    block = 1 << max(0, (cols - 1).bit_length())
    if block <= TRITON_RESIDENT_LIMIT:
        warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
        return {"kernel": "softmax_row_resident", "BLOCK": block, "num_warps": warps}
    return {"kernel": "softmax_row_looped", "BLOCK": TRITON_LOOP_BLOCK, "num_warps": 16}


class TritonSoftmax(LibrarySoftmax):
    """Our Triton softmax (in the spirit of Triton's fused-softmax tutorial), one program per row,
    launched on our stream through PyTorch's current stream, on our memory through DLPack."""

    name = "triton"

    def __init__(self, x, stream):
        if triton is None:
            raise BaselineUnavailable(f"Triton cannot be imported ({TRITON_IMPORT_ERROR})")
        super().__init__(x)
        self.torch, self.external = _torch_on_stream(stream)
        self.xt, self.yt = _shared_tensor(self.torch, self.x), _shared_tensor(self.torch, self.y)
        self.shape = triton_launch_shape(self.cols)
        kernel = {"softmax_row_resident": softmax_row_resident, "softmax_row_looped": softmax_row_looped}[self.shape["kernel"]]
        self.launcher = kernel[(self.rows,)]
        self.block, self.warps = self.shape["BLOCK"], self.shape["num_warps"]
        try:  # Triton launches on the stream its driver reports; it must be ours
            active = triton.runtime.driver.active
            current = active.get_current_stream(active.get_current_device())
        except Exception:
            current = None
        if current is not None and current != stream.ptr:
            raise BaselineUnavailable(f"Triton's current stream {current:#x} is not the CuPy stream {stream.ptr:#x}")
        self.stream_checked = current is not None

    def invoke(self) -> None:
        self.launcher(self.xt, self.yt, self.cols, BLOCK=self.block, num_warps=self.warps)

    def version(self) -> str:
        return str(triton.__version__)

    def describe(self) -> dict:
        return {"triton_version": triton.__version__, "stream_checked": self.stream_checked, **self.shape}


BASELINES = {"cudnn": CudnnSoftmax, "torch": TorchSoftmax, "triton": TritonSoftmax}


def make_baseline(name: str, x, stream):
    """(the library's Target on x, with an output buffer of its own, None) or (None, why it is unavailable)."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(NAMES)}")
    try:
        return BASELINES[name](x, stream), None
    except BaselineUnavailable as error:
        return None, str(error)
    except Exception as error:  # a library that loads but fails to set up is unavailable too, with the error
        return None, f"{type(error).__name__}: {error}"
