"""A cost model of the fused softmax designs (NumPy only): device time per call, warm and cold L2, of each
configuration the launch policy considers, from the bytes it moves, how its blocks fill the GPU and how many
reduction round trips it makes; its constants are fitted by least squares on a calibration plane."""
from __future__ import annotations

import numpy as np

# The plane's distribution (the fusion chapter's): rows log-uniform in 1..65536, row length log-uniform in
# 1..2^21 floats, a draw whose matrix falls outside 4 KiB..256 MiB redrawn.
MAX_ROWS = 1 << 16
MAX_COLS = 1 << 21
MIN_BYTES = 4 << 10
MAX_BYTES = 256 << 20
CALIBRATION_SEED = 4851   # the calibration plane's: never the chapter's
CALIBRATION_POINTS = 96


def draw_plane(seed: int, points: int) -> list[tuple[int, int]]:
    """`points` distinct shapes (rows, cols) of the plane's distribution, in the order drawn."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, int]] = []
    while len(shapes) < points:
        rows = int(np.floor(np.exp(rng.uniform(0.0, np.log(MAX_ROWS + 1)))))
        cols = int(np.floor(np.exp(rng.uniform(0.0, np.log(MAX_COLS + 1)))))
        if MIN_BYTES <= 4 * rows * cols <= MAX_BYTES and (rows, cols) not in shapes:
            shapes.append((rows, cols))
    return shapes
