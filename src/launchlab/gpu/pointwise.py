"""Example A's targets on the GPU (kernels/pointwise.cu): three kernels or one, on fixed buffers.

Both paths can share one input and one output buffer (pass `x`, `y`), so that every variant of a
comparison reads and writes the same addresses. `profile_dram` runs Nsight Compute over this module's
own entry, `python -m launchlab.gpu.pointwise profile N`. Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import cupy
import numpy as np

from launchlab.gpu import build
from launchlab.gpu.targets import Target, enqueue_launches
from launchlab.model import pointwise as model

FAMILY = "pointwise"
# FMA contraction off for this family. The kernels' explicit-rounding intrinsics already rule it
# out; the flag keeps the build honest should a plain * or + ever enter the source.
EXTRA_OPTIONS = model.COMPILE_OPTIONS
THREE_KERNELS = ("pw_add_one", "pw_square", "pw_halve")
FUSED_KERNELS = ("pw_fused",)


def load(defines: dict | None = None) -> build.BuiltModule:
    """Compile kernels/pointwise.cu with NVRTC through CuPy, FMA contraction off."""
    return build.load_module(FAMILY, defines, extra_options=EXTRA_OPTIONS)


def _buffer(n: int, given=None):
    """A float32 device vector of n elements: `given` (checked) or a new one."""
    if given is None:
        return cupy.empty(n, dtype=cupy.float32)
    if given.shape != (n,) or given.dtype != cupy.float32 or not given.flags.c_contiguous:
        raise ValueError(f"expected a contiguous float32 vector of {n} elements")
    return given


class _Pointwise(Target):
    """Shared by both paths: fixed x and y, the launch list, poison, load and output."""

    KERNELS: tuple[str, ...] = ()
    path = ""

    def __init__(self, n: int, x=None, y=None):
        self.n = int(n)
        self.x, self.y = _buffer(self.n, x), _buffer(self.n, y)
        self.grid, self.block = (model.grid(self.n),), (model.BLOCK,)
        self.launches: tuple = ()

    @property
    def logical_bytes(self) -> int:
        return model.logical_bytes(self.path, self.n)

    def intermediates(self) -> tuple:
        return ()

    def invoke(self) -> None:
        """Enqueue one invocation on the current stream; no wait."""
        enqueue_launches(self.launches)

    def poison(self) -> None:
        """NaN in the output and every intermediate, so an unwritten element fails the exact check."""
        for array in (self.y, *self.intermediates()):
            array.fill(np.nan)

    def load(self, x: np.ndarray) -> None:
        """Copy a bounded dyadic input into x (the exact check covers only those)."""
        model.check_input(x)
        if np.shape(x) != (self.n,):
            raise ValueError(f"expected {self.n} elements, got shape {np.shape(x)}")
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))

    def output(self) -> np.ndarray:
        return self.y.get()


class ThreePointwise(_Pointwise):
    """pw_add_one, pw_square, pw_halve: a and b stored in global memory between the launches."""

    name = "three"
    KERNELS = THREE_KERNELS
    path = "three"

    def __init__(self, built: build.BuiltModule, n: int, x=None, y=None):
        super().__init__(n, x, y)
        self.a, self.b = cupy.empty_like(self.x), cupy.empty_like(self.x)
        length = np.uint64(self.n)
        add_one, square, halve = (built.kernel(name) for name in self.KERNELS)
        self.launches = ((add_one, self.grid, self.block, (self.x, self.a, length)),
                         (square, self.grid, self.block, (self.a, self.b, length)),
                         (halve, self.grid, self.block, (self.b, self.y, length)))

    def intermediates(self) -> tuple:
        return (self.a, self.b)


class FusedPointwise(_Pointwise):
    """pw_fused: one launch, a and b in registers."""

    name = "fused"
    KERNELS = FUSED_KERNELS
    path = "fused"

    def __init__(self, built: build.BuiltModule, n: int, x=None, y=None):
        super().__init__(n, x, y)
        self.launches = ((built.kernel("pw_fused"), self.grid, self.block, (self.x, self.y, np.uint64(self.n))),)


PATHS = {"three": ThreePointwise, "fused": FusedPointwise}


def variants(built: build.BuiltModule, n: int, stream) -> dict:
    """{variant name (model.VARIANTS): Target or GraphReplay}: both paths on one x and one y, each
    launched from the stream and replayed from a graph captured on `stream` (the current stream).

    A graph variant shares its path's buffers, so load/poison/output are the path's; its `dot` is
    CUDA's description of the captured graph and `setup` the capture's host costs."""
    from launchlab.gpu.capture import GraphReplay

    three = ThreePointwise(built, n)
    fused = FusedPointwise(built, n, x=three.x, y=three.y)
    made = {}
    for path, target in (("three", three), ("fused", fused)):
        made[f"{path}_stream"] = target
        made[f"{path}_graph"] = GraphReplay(target, stream)
    return {name: made[name] for name in model.VARIANTS}


# --------------------------------------------------------------------------- Nsight Compute
PROFILE_FILTER = "regex:^pw_"   # ncu profiles these kernels only (not CuPy's fills and copies)
PROFILE_SEED = 1


def profile_dram(n: int, timeout_s: int = 300) -> dict:
    """{"command", "returncode", "csv", "error"}: ncu's CSV text for both paths at n, or why there is none (a
    separate process, never inside a timed region; every kernel starts with a cold L2)."""
    from launchlab.gpu import ncu

    return ncu.profile(["launchlab.gpu.pointwise", "profile", str(int(n))], kernel_filter=PROFILE_FILTER,
                       timeout_s=timeout_s)


def _profile(n: int) -> None:
    """Both paths once each on one bounded dyadic input of n elements (under ncu); prints nothing."""
    from launchlab.gpu.backend import CupyBackend

    CupyBackend()
    built = load()
    three = ThreePointwise(built, n)
    fused = FusedPointwise(built, n, x=three.x, y=three.y)
    three.load(model.fixture(PROFILE_SEED, 0, n))
    cupy.cuda.get_current_stream().synchronize()
    three.invoke()
    fused.invoke()
    cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "profile":
        _profile(int(sys.argv[2]))
    else:
        sys.exit("usage: python -m launchlab.gpu.pointwise profile N")
