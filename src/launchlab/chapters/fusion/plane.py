"""Chapter 3's random shape plane: which (rows, row length) points it measures, and what the GPU's size makes of
them (NumPy only; the declaration and the summary both read it).

The plane is drawn once from a seed fixed in the declaration (PLANE_SEED), never changed after the chapter's first
plane run: rows log-uniform in 1..PLANE_MAX_ROWS, row lengths log-uniform in 1..PLANE_MAX_COLS floats, and a draw
whose matrix falls outside PLANE_MIN_BYTES..PLANE_MAX_BYTES is drawn again (as is a shape drawn twice). The same seed
gives the same shapes: NumPy's PCG64 stream is stable across releases."""
from __future__ import annotations

import math

import numpy as np

PLANE_SEED = 20261201            # fixed before the plane's first run; a new seed is a new plane, never a retune
PLANE_MAX_ROWS = 1 << 16
PLANE_MAX_COLS = 1 << 21          # floats
PLANE_MIN_BYTES = 4 << 10         # the matrix of float32 values, x alone
PLANE_MAX_BYTES = 256 << 20
PLANE_MIN_POINTS = 96             # the chapter's plane: at least this many random points
BANDWIDTH_COPY_US = 10.0          # a point is in the bandwidth regime when the copy ceiling takes at least this long
FLOOR_ROW_BYTES = 4 << 20         # one or two rows holding at least this much must share statistics across blocks
REGISTER_BYTES_PER_SM = 65536 * 4  # 64 K 32-bit registers an SM on every GPU the book builds for (sm_80 to sm_100)


def log_uniform_int(generator: np.random.Generator, high: int) -> int:
    """An integer in 1..high whose logarithm is uniform (rounded down, so each power of two's octave is as likely)."""
    return min(high, int(math.floor(math.exp(generator.uniform(0.0, math.log(high + 1))))))


def draw(points: int, seed: int = PLANE_SEED) -> list[tuple[int, int]]:
    """`points` distinct (rows, cols) shapes of the plane, in the order drawn."""
    if points < 1:
        raise ValueError(f"the plane needs at least one point, not {points}")
    generator = np.random.default_rng(seed)
    shapes: dict[tuple[int, int], None] = {}
    while len(shapes) < points:
        rows, cols = log_uniform_int(generator, PLANE_MAX_ROWS), log_uniform_int(generator, PLANE_MAX_COLS)
        if PLANE_MIN_BYTES <= 4 * rows * cols <= PLANE_MAX_BYTES:
            shapes.setdefault((rows, cols), None)
    return list(shapes)


def on_chip_bytes(device: dict) -> int:
    """What the whole GPU holds on chip for a row: every SM's registers and shared memory, from its identity."""
    shared = int(device.get("shared_bytes_per_sm") or device["shared_bytes_per_block_optin"])
    return int(device["sm_count"]) * (REGISTER_BYTES_PER_SM + shared)


def floor_reason(rows: int, cols: int, device: dict) -> str | None:
    """Why a shape is in the floor class (None: it is not): one or two rows of FLOOR_ROW_BYTES or more, whose
    blocks must learn the row's statistics from each other before writing; or fewer rows than SMs holding more than
    the GPU's registers and shared memory, so x cannot stay on chip between the reduction and the write."""
    row_bytes, total = 4 * cols, 4 * rows * cols
    if rows <= 2 and row_bytes >= FLOOR_ROW_BYTES:
        return f"{rows} row{'s' if rows > 1 else ''} of {row_bytes / 2**20:.1f} MiB each"
    if rows < int(device["sm_count"]) and total > on_chip_bytes(device):
        return (f"{rows} rows (fewer than the {device['sm_count']} SMs) holding {total / 2**20:.1f} MiB, more than the "
                f"{on_chip_bytes(device) / 2**20:.1f} MiB of registers and shared memory")
    return None


def regime(copy_us: float) -> str:
    """"bandwidth" where the copy ceiling itself takes BANDWIDTH_COPY_US or more, else "latency"."""
    return "bandwidth" if copy_us >= BANDWIDTH_COPY_US else "latency"
