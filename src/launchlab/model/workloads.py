"""Workload inputs: deterministic fixtures from a seed, and the shapes the chapters use."""
from __future__ import annotations

import numpy as np

from launchlab.model.oracles import check_matrix

FIXTURES_BEFORE_TIMING = 3  # fixture indices 0, 1, 2; index 3 is held out until after timing
HELD_OUT_FIXTURE = 3
FUSION_SHAPES = ((4096, 128), (4096, 512), (4096, 1024), (4096, 4096), (4096, 16384), (128, 65536))


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """'4096x4096,128x8192' -> [(4096, 4096), (128, 8192)], with a clear error for bad input."""
    shapes = []
    for item in (part.strip() for part in text.split(",")):
        try:
            rows, cols = (int(v) for v in item.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape {item!r} is not ROWSxCOLS") from None
        if rows <= 0 or cols <= 0:
            raise ValueError(f"shape {item!r} has zero {'columns' if cols <= 0 else 'rows'}")
        shapes.append((rows, cols))
    if not shapes:
        raise ValueError("no shapes given")
    return shapes


def shape_name(rows: int, cols: int) -> str:
    return f"{rows}x{cols}"


def fixture_seed(base_seed: int, index: int) -> int:
    return base_seed * 16 + index


def rms_softmax_fixture(base_seed: int, index: int, rows: int, cols: int) -> np.ndarray:
    """Float32 input: normal values whose scale differs per row (so rho and m vary), with
    a few large entries so the max subtraction matters. Same seed, same matrix."""
    generator = np.random.default_rng(fixture_seed(base_seed, index))
    scale = generator.uniform(0.25, 4.0, size=(rows, 1))
    x = generator.standard_normal((rows, cols), dtype=np.float32) * scale.astype(np.float32)
    spikes = generator.integers(0, cols, size=rows)
    x[np.arange(rows), spikes] += np.float32(12.0)
    check_matrix(x)
    return x


# ---------------------------------------------------------------- tiled path (chapters 2 and 4)
TILE = 1024  # elements per tile; kernels/tiled.cuh's TILE
# The tiled path's three kernels (kernels/tiled_softmax.cu), A, B and C, in launch order; here so that a
# declaration can name them without importing CuPy.
STAGE_KERNELS = ("tile_producer", "row_combiner", "tile_consumer")


TILED_CASES = ("balanced", "ragged", "loguniform", "giant")
LOGUNIFORM_SEED = 20261201  # fixed before the case's first run: the case is the same 128 lengths on every run
LOGUNIFORM_ROWS, LOGUNIFORM_LONGEST = 128, 65536
GIANT_ROW, GIANT_SHORT_ROWS, GIANT_SHORT_LENGTH = 262_144, 200, 33
GIANT_POSITION = GIANT_SHORT_ROWS // 2  # the long row sits among the short ones, not at either end


def tiled_row_lengths(case: str) -> np.ndarray:
    """The tiled cases' row lengths (int64):

    balanced: 128 rows of 8192; ragged: rows r % 8 == 0 hold 36,864, the others 4,096 (both 1,048,576 elements in
    1024 tiles); loguniform: 128 rows whose lengths are log-uniform over 1 .. 65,536 (drawn from LOGUNIFORM_SEED);
    giant: one row of 262,144 among 200 rows of 33 (201 rows)."""
    if case == "balanced":
        return np.full(128, 8192, dtype=np.int64)
    if case == "ragged":
        return np.where(np.arange(128) % 8 == 0, 36864, 4096).astype(np.int64)
    if case == "loguniform":
        exponent = np.random.default_rng(LOGUNIFORM_SEED).uniform(0.0, np.log(LOGUNIFORM_LONGEST), LOGUNIFORM_ROWS)
        return np.clip(np.rint(np.exp(exponent)), 1, LOGUNIFORM_LONGEST).astype(np.int64)
    if case == "giant":
        lengths = np.full(GIANT_SHORT_ROWS + 1, GIANT_SHORT_LENGTH, dtype=np.int64)
        lengths[GIANT_POSITION] = GIANT_ROW
        return lengths
    raise ValueError(f"unknown tiled case {case!r}; expected one of {', '.join(TILED_CASES)}")


def tile_table(lengths: np.ndarray, tile: int = TILE) -> dict:
    """int32 arrays the tiled kernels read: row offsets, each row's first tile, and per tile its row, start, length."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or lengths.size == 0 or (lengths <= 0).any():
        raise ValueError("every row needs at least one element")
    row_offsets = np.concatenate([[0], np.cumsum(lengths)])
    tiles_per_row = -(-lengths // tile)
    row_first_tile = np.concatenate([[0], np.cumsum(tiles_per_row)])
    tile_row = np.repeat(np.arange(lengths.size), tiles_per_row)
    within = np.arange(tile_row.size) - row_first_tile[tile_row]
    tile_start = row_offsets[tile_row] + within * tile
    tile_len = np.minimum(tile, row_offsets[tile_row + 1] - tile_start)
    if row_offsets[-1] >= 2**31:
        raise ValueError("the tiled kernels index with 32-bit integers")
    return {name: np.ascontiguousarray(array, dtype=np.int32) for name, array in (
        ("row_offsets", row_offsets), ("row_first_tile", row_first_tile), ("tile_row", tile_row),
        ("tile_start", tile_start), ("tile_len", tile_len))}


def packed_fixture(base_seed: int, index: int, lengths: np.ndarray) -> np.ndarray:
    """Rows of the given lengths packed end to end, each drawn like `rms_softmax_fixture`'s rows."""
    generator = np.random.default_rng(fixture_seed(base_seed, index))
    rows = []
    for length in np.asarray(lengths):
        row = generator.standard_normal(int(length), dtype=np.float32) * np.float32(generator.uniform(0.25, 4.0))
        row[generator.integers(0, length)] += np.float32(12.0)
        rows.append(row)
    values = np.concatenate(rows)
    check_matrix(values[None, :])
    return values
