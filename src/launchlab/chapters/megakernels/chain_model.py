"""The chain's float64 oracle and its declared tolerance (NumPy only).

Stage s of the chain is the tiled A -> B -> C step in plain-softmax mode (rho = 1, kernels/design_helpers.cuh says
why) on stage s - 1's output; the oracle iterates the float64 softmax from the float32 input, so a stage's
error is its own rounding plus what the earlier stages' rounding moved its input by."""
from __future__ import annotations

import numpy as np

from launchlab.model import oracles

MAX_STAGES = 16
# Declared before the first run, for every stage up to MAX_STAGES: each stage rounds once more, and a softmax's
# output error relative to its value is at most about its input's absolute error (values stay below 1),
# so 16 stages of float32 rounding stay far inside 1e-4 relative; no absolute floor: outputs are about
# 1 / row length, an absolute tolerance would hide relative errors of whole percents.
CHAIN_TOLERANCE = oracles.Tolerance(rtol=1e-4, atol=0.0)


def chain_oracle(values: np.ndarray, row_offsets: np.ndarray, stages: int) -> list[np.ndarray]:
    """Every stage's float64 output, stage 1 first."""
    if stages < 1:
        raise ValueError(f"a chain needs at least one stage, not {stages}")
    offsets = np.asarray(row_offsets, dtype=np.int64)
    current = np.asarray(values, dtype=np.float64)
    outputs = []
    for _ in range(stages):
        current = np.concatenate([oracles.softmax(current[None, a:b])[0] for a, b in zip(offsets[:-1], offsets[1:])])
        outputs.append(current)
    return outputs


def every_stage(values: np.ndarray, row_offsets: np.ndarray, stages: int) -> np.ndarray:
    """Every stage's float64 output end to end (what a chain target's output holds)."""
    return np.concatenate(chain_oracle(values, row_offsets, stages))


def stacked_offsets(row_offsets: np.ndarray, stages: int) -> np.ndarray:
    """Row offsets of `stages` copies of the packed rows end to end."""
    offsets = np.asarray(row_offsets, dtype=np.int64)
    total = int(offsets[-1])
    return np.concatenate([offsets[:1]] + [offsets[1:] + s * total for s in range(stages)])


def worst_relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / |ref| (NaN anywhere: infinity)."""
    out = np.asarray(out, dtype=np.float64)
    if not np.isfinite(out).all():
        return float("inf")
    return float(np.max(np.abs(out - ref) / np.abs(ref)))
