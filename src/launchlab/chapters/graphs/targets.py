"""The graph-length targets of chapter 2: N empty kernels, and k back-to-back copies of the row path.

Imports CuPy (through gpu.targets); only run.py, on the GPU, imports this module."""
from __future__ import annotations

import numpy as np

from launchlab.gpu.targets import RowPath, Target, enqueue_launches


class EmptyKernels(Target):
    """`count` launches of the empty kernel, one block of one thread each. No output to validate."""

    name = "empty"

    def __init__(self, built, count: int):
        kernel = built.kernel("empty_kernel")
        self.launches = tuple((kernel, (1,), (1,), ()) for _ in range(count))

    def invoke(self) -> None:
        enqueue_launches(self.launches)

    def poison(self) -> None:  # nothing is written
        pass

    def load(self, x: np.ndarray) -> None:
        raise TypeError("the empty kernel reads no input")

    def output(self) -> np.ndarray:
        raise TypeError("the empty kernel writes no output")


class RowCopies(Target):
    """The row path's four launches repeated `copies` times on one set of buffers: every copy reads x and
    rewrites the same e and y, so the output is the row path's."""

    name = "row4copies"
    KERNELS = RowPath.KERNELS

    def __init__(self, path: RowPath, copies: int):
        self.path, self.copies = path, copies
        self.launches = tuple(path.launches) * copies

    def invoke(self) -> None:
        enqueue_launches(self.launches)

    def poison(self) -> None:
        self.path.poison()

    def load(self, x: np.ndarray) -> None:
        self.path.load(x)

    def output(self) -> np.ndarray:
        return self.path.output()
