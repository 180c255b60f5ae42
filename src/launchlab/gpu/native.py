"""The native launch loop (native/launch_loop.cpp) built with nvcc and called through ctypes.

It launches the very CUfunctions CuPy loaded, with the same arguments, so the only
difference from a CuPy launch is the host path: C++ calling cuLaunchKernel directly.
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent / "native" / "launch_loop.cpp"
NVCC_OPTIONS = ("-shared", "-O2", "-std=c++17", "-Xcompiler", "-fPIC")


def build_library(directory: Path | None = None) -> tuple[Path | None, str]:
    """(path of the built library, how) or (None, why it could not be built)."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None, "nvcc is not on PATH, so the native launch loop was not built"
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(NVCC_OPTIONS).encode()).hexdigest()[:16]
    directory = Path(directory or tempfile.gettempdir()) / "launchlab-native"
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / f"liblaunch_loop-{digest}.so"
    if not library.exists():
        result = subprocess.run([nvcc, *NVCC_OPTIONS, "-o", str(library), str(SOURCE), "-ldl"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return None, f"nvcc failed to build the native launch loop: {result.stderr.strip()}"
    return library, f"nvcc {' '.join(NVCC_OPTIONS)} {SOURCE.name} -ldl"


def _argument(value):
    if hasattr(value, "data") and hasattr(value.data, "ptr"):  # a CuPy array
        return ctypes.c_void_p(value.data.ptr)
    if isinstance(value, (np.int32, int)):
        return ctypes.c_int32(int(value))
    raise TypeError(f"the native loop cannot pass an argument of type {type(value).__name__}")


class NativeLauncher:
    def __init__(self, library: Path):
        self.library = ctypes.CDLL(str(library))
        self.library.launch_loop.restype = ctypes.c_int
        status = self.library.launch_loop_init()
        if status != 0:
            raise RuntimeError(f"native launch loop could not open libcuda (status {status})")

    def prepare(self, launches):
        """Pack [(CUfunction, grid, block, args)] into the C arrays the loop reads."""
        count = len(launches)
        values = [[_argument(a) for a in args] for _, _, _, args in launches]
        pointer_arrays = [(ctypes.c_void_p * len(v))(*[ctypes.addressof(a) for a in v]) for v in values]
        packed = {
            "count": count,
            "functions": (ctypes.c_void_p * count)(*[f for f, _, _, _ in launches]),
            "grid": (ctypes.c_uint * count)(*[g for _, g, _, _ in launches]),
            "block": (ctypes.c_uint * count)(*[b for _, _, b, _ in launches]),
            "params": (ctypes.c_void_p * count)(*[ctypes.addressof(p) for p in pointer_arrays]),
            "keep": (values, pointer_arrays),  # the arrays above point into these
        }
        return packed

    def enqueue(self, packed, stream_ptr: int, repeats: int) -> None:
        """Issue every kernel `repeats` times and return without waiting."""
        status = self.library.launch_enqueue(packed["count"], packed["functions"], packed["grid"], packed["block"],
                                             packed["params"], ctypes.c_void_p(stream_ptr), repeats)
        if status != 0:
            raise RuntimeError(f"cuLaunchKernel returned CUresult {status}")

    def run(self, packed, stream_ptr: int, repeats: int) -> tuple[int, int]:
        """Launch every kernel `repeats` times; (enqueue ns, completion ns) as C++ timed them."""
        enqueue, complete = ctypes.c_longlong(), ctypes.c_longlong()
        status = self.library.launch_loop(packed["count"], packed["functions"], packed["grid"], packed["block"],
                                          packed["params"], ctypes.c_void_p(stream_ptr), repeats,
                                          ctypes.byref(enqueue), ctypes.byref(complete))
        if status != 0:
            raise RuntimeError(f"cuLaunchKernel or cuStreamSynchronize returned CUresult {status}")
        return enqueue.value, complete.value
