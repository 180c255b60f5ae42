"""Example A's targets on the GPU (kernels/pointwise.cu): three kernels or one, on fixed buffers.

Both paths can share one input and one output buffer (pass `x`, `y`), so that every variant of a
comparison reads and writes the same addresses. Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu import build
from launchlab.model import pointwise as model

FAMILY = "pointwise"
# FMA contraction off for this family. The kernels' explicit-rounding intrinsics already rule it
# out; the flag keeps the build honest should a plain * or + ever enter the source.
EXTRA_OPTIONS = model.COMPILE_OPTIONS
THREE_KERNELS = ("pw_add_one", "pw_square", "pw_halve")
FUSED_KERNELS = ("pw_fused",)


def options(defines: dict | None = None) -> tuple[str, ...]:
    """The house options (build.compile_options) plus this family's own."""
    base = build.compile_options(defines)
    return base + tuple(o for o in EXTRA_OPTIONS if o not in base)


def load(defines: dict | None = None) -> build.BuiltModule:
    """Compile kernels/pointwise.cu with NVRTC through CuPy, FMA contraction off."""
    source = build.expand_source(build.KERNEL_DIR / f"{FAMILY}.cu")
    module = cupy.RawModule(code=source, options=options(defines))
    module.compile()
    return build.BuiltModule(FAMILY, options(defines), source, module)


def _buffer(n: int, given=None):
    """A float32 device vector of n elements: `given` (checked) or a new one."""
    if given is None:
        return cupy.empty(n, dtype=cupy.float32)
    if given.shape != (n,) or given.dtype != cupy.float32 or not given.flags.c_contiguous:
        raise ValueError(f"expected a contiguous float32 vector of {n} elements")
    return given


class _Pointwise:
    """Shared by both paths: fixed x and y, the launch list, poison and compute."""

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
        for kernel, grid, block, args in self.launches:
            kernel(grid, block, args)

    def poison(self) -> None:
        """NaN in the output and every intermediate, so an unwritten element fails the exact check."""
        for array in (self.y, *self.intermediates()):
            array.fill(np.nan)

    def compute(self, x: np.ndarray, invoke=None) -> np.ndarray:
        """Run once on `x` with `invoke` (default: the stream launches; a graph replay reads the same
        buffers) and return y. Validation, not timing."""
        model.check_input(x)
        if np.shape(x) != (self.n,):
            raise ValueError(f"expected {self.n} elements, got shape {np.shape(x)}")
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))
        self.poison()
        (invoke or self.invoke)()
        cupy.cuda.get_current_stream().synchronize()
        return self.y.get()


class ThreePointwise(_Pointwise):
    """pw_add_one, pw_square, pw_halve: a and b stored in global memory between the launches."""

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

    KERNELS = FUSED_KERNELS
    path = "fused"

    def __init__(self, built: build.BuiltModule, n: int, x=None, y=None):
        super().__init__(n, x, y)
        self.launches = ((built.kernel("pw_fused"), self.grid, self.block, (self.x, self.y, np.uint64(self.n))),)


PATHS = {"three": ThreePointwise, "fused": FusedPointwise}
