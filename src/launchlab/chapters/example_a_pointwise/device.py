"""Example A's targets on the GPU (kernels/pointwise.cu): three kernels or one, on fixed buffers.

Every row at one size reads one x and writes one y (`Context.buffers`), so that every variant of a
comparison reads and writes the same addresses. Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.example_a_pointwise import model
from launchlab.gpu import build
from launchlab.gpu.targets import Target, enqueue_launches

FAMILY = "pointwise"
# FMA contraction off for this family. The kernels' explicit-rounding intrinsics already rule it
# out; the flag keeps the build honest should a plain * or + ever enter the source.
EXTRA_OPTIONS = model.COMPILE_OPTIONS


def load(defines: dict | None = None) -> build.BuiltModule:
    """Compile kernels/pointwise.cu with NVRTC through CuPy, FMA contraction off."""
    return build.load_module(FAMILY, defines, extra_options=EXTRA_OPTIONS)


class Context:
    """What the rows' `make` reads: the built module, and one x and one y per size shared by every row."""

    def __init__(self, built: build.BuiltModule):
        self.built = built
        self._buffers: dict[int, tuple] = {}

    def buffers(self, n: int) -> tuple:
        if n not in self._buffers:
            self._buffers[n] = (cupy.empty(n, dtype=cupy.float32), cupy.empty(n, dtype=cupy.float32))
        return self._buffers[n]


class _Pointwise(Target):
    """Shared by both paths: fixed x and y, the launch list, poison, load and output."""

    def __init__(self, context: Context, n: int):
        self.n = int(n)
        self.x, self.y = context.buffers(self.n)
        self.grid, self.block = (model.grid(self.n),), (model.BLOCK,)
        self.launches: tuple = ()

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

    def __init__(self, context: Context, n: int):
        super().__init__(context, n)
        self.a, self.b = cupy.empty_like(self.x), cupy.empty_like(self.x)
        length = np.uint64(self.n)
        add_one, square, halve = (context.built.kernel(name) for name in ("pw_add_one", "pw_square", "pw_halve"))
        self.launches = ((add_one, self.grid, self.block, (self.x, self.a, length)),
                         (square, self.grid, self.block, (self.a, self.b, length)),
                         (halve, self.grid, self.block, (self.b, self.y, length)))

    def intermediates(self) -> tuple:
        return (self.a, self.b)


class FusedPointwise(_Pointwise):
    """pw_fused: one launch, a and b in registers."""

    name = "fused"

    def __init__(self, context: Context, n: int):
        super().__init__(context, n)
        self.launches = ((context.built.kernel("pw_fused"), self.grid, self.block, (self.x, self.y, np.uint64(self.n))),)
