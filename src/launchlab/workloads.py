"""Workload inputs: deterministic fixtures from a seed, and the shapes of SPEC §2.1."""
from __future__ import annotations

import numpy as np

from .oracles import check_matrix

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
