"""Float64 reference results (NumPy; this module never imports CuPy).

The row-wise oracles and `compare` also take `xp`, an array module with NumPy's interface: given CuPy they
run the same float64 arithmetic on the GPU, where a fixture is too large to check on the host in time.

Tolerances are declared here, before any run, and never loosened after a failure.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """|out - ref| <= rtol * |ref| + atol * max_row|ref|, element by element.

    The row-scaled absolute term covers tiny probabilities, whose float32 values
    carry absolute rather than relative error after the row sum.
    """
    rtol: float
    atol: float


# FP32 kernels: exp is within a few ulp, sums over up to 65,536 terms in tree
# order lose a few more; 1e-4 relative leaves a wide margin without hiding a bug
# (a wrong max, a missing element or a wrong scale moves results by far more).
RMS_SOFTMAX_TOLERANCE = Tolerance(rtol=1e-4, atol=1e-6)


def check_matrix(x: np.ndarray) -> None:
    """A valid workload input: finite, two-dimensional, at least one column."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {x.shape}")
    if x.shape[1] == 0:
        raise ValueError(f"shape {x.shape} has zero columns: every row needs at least one element")
    if x.shape[0] == 0:
        raise ValueError(f"shape {x.shape} has zero rows")
    bad = np.argwhere(~np.isfinite(x))
    if bad.size:
        row, col = bad[0]
        raise ValueError(f"non-finite value {float(x[row, col])!r} at ({row}, {col}); the workload needs finite entries")


def _checked(x, xp):
    """x as a float64 matrix of module xp, after check_matrix (on the host, only where it fails on the device)."""
    if xp is np:
        check_matrix(x)
    elif x.ndim != 2 or 0 in x.shape or not bool(xp.isfinite(x).all()):
        check_matrix(x.get())
    return xp.asarray(x, dtype=xp.float64)


def rms_softmax(x: np.ndarray, xp=np) -> np.ndarray:
    """y_rj = rho_r * exp(x_rj - m_r) / z_r in float64."""
    x = _checked(x, xp)
    rho = xp.sqrt(xp.mean(x * x, axis=1, keepdims=True))
    shifted = xp.exp(x - x.max(axis=1, keepdims=True))
    return rho * shifted / shifted.sum(axis=1, keepdims=True)


def rms_softmax_packed(values: np.ndarray, row_offsets: np.ndarray) -> np.ndarray:
    """The oracle over rows of different lengths packed end to end."""
    return np.concatenate([rms_softmax(values[None, start:end])[0]
                           for start, end in zip(row_offsets[:-1], row_offsets[1:])])


def compare(out: np.ndarray, ref: np.ndarray, tolerance: Tolerance, row_offsets: np.ndarray | None = None,
            xp=np) -> dict:
    """Element-wise check against the oracle; NaN (an unwritten, poisoned element) never passes.

    `ref` is a matrix, or packed rows delimited by `row_offsets` (NumPy only)."""
    out = xp.asarray(out, dtype=xp.float64)
    ref = xp.asarray(ref, dtype=xp.float64)
    if out.shape != ref.shape:
        return {"passed": False, "reason": f"shape {out.shape} differs from reference {ref.shape}"}
    if row_offsets is None:
        scale = xp.abs(ref).max(axis=1, keepdims=True)
    else:
        lengths = np.diff(row_offsets)
        scale = np.repeat(np.maximum.reduceat(np.abs(ref), row_offsets[:-1]), lengths)
    error = xp.abs(out - ref)
    allowed = tolerance.rtol * xp.abs(ref) + tolerance.atol * scale
    within = error <= allowed  # False wherever out is NaN
    norm_ref = float(xp.linalg.norm(ref))
    finite = xp.isfinite(out)
    return {
        "passed": bool(within.all()),
        "elements": int(out.size),
        "failing_elements": int((~within).sum()),
        "non_finite_elements": int((~finite).sum()),
        "max_abs_error": float(xp.nanmax(error)) if bool(finite.any()) else None,
        "relative_l2_error": float(xp.linalg.norm(xp.where(finite, out - ref, 0.0)) / norm_ref) if norm_ref else None,
        "rtol": tolerance.rtol,
        "atol": tolerance.atol,
    }


# ---------------------------------------------------------------- plain softmax (chapter 3's library comparison)
# The same float32 error sources as the RMS-scaled form without the rho factor, so the
# same margin; declared separately so that either can be reasoned about on its own.
SOFTMAX_TOLERANCE = Tolerance(rtol=1e-4, atol=1e-6)


def softmax(x: np.ndarray, xp=np) -> np.ndarray:
    """Plain softmax y_rj = exp(x_rj - m_r) / z_r in float64: the RMS-scaled form with rho = 1."""
    x = _checked(x, xp)
    shifted = xp.exp(x - x.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _row_blocks(rows: int, workers: int) -> list[slice]:
    step = -(-rows // workers)
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def _workers(workers: int | None) -> int:
    import os

    return max(1, workers or os.cpu_count() or 1)


def by_row_blocks(function, x: np.ndarray, workers: int | None = None) -> np.ndarray:
    """A row-wise oracle (rms_softmax, softmax) over blocks of rows in threads, stacked.

    Each row's result depends on that row alone, so the result equals function(x); NumPy
    releases the GIL in its loops, so the blocks run in parallel on large fixtures."""
    from concurrent.futures import ThreadPoolExecutor

    x = np.asarray(x)
    check_matrix(x)
    blocks = _row_blocks(x.shape[0], _workers(workers))
    if len(blocks) == 1:
        return function(x)
    with ThreadPoolExecutor(len(blocks)) as pool:
        return np.concatenate(list(pool.map(lambda rows: function(x[rows]), blocks)))


def compare_by_row_blocks(out: np.ndarray, ref: np.ndarray, tolerance: Tolerance, workers: int | None = None) -> dict:
    """compare() over blocks of rows in threads, merged into compare()'s fields and verdict.

    The tolerance is per element with a per-row scale, so a block check is the check of its
    rows; only the relative L2 error needs the blocks' squared norms, merged exactly."""
    from concurrent.futures import ThreadPoolExecutor

    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape or out.ndim != 2:
        return compare(out, ref, tolerance)
    blocks = _row_blocks(out.shape[0], _workers(workers))

    def check(rows):
        part_out, part_ref = np.asarray(out[rows], dtype=np.float64), np.asarray(ref[rows], dtype=np.float64)
        result = compare(part_out, part_ref, tolerance)
        difference = np.where(np.isfinite(part_out), part_out - part_ref, 0.0)
        result["_difference_sq"] = float(np.sum(difference * difference))
        result["_reference_sq"] = float(np.sum(part_ref * part_ref))
        return result

    with ThreadPoolExecutor(len(blocks)) as pool:
        parts = list(pool.map(check, blocks))
    errors = [p["max_abs_error"] for p in parts if p["max_abs_error"] is not None]
    reference_sq = sum(p["_reference_sq"] for p in parts)
    return {
        "passed": all(p["passed"] for p in parts),
        "elements": sum(p["elements"] for p in parts),
        "failing_elements": sum(p["failing_elements"] for p in parts),
        "non_finite_elements": sum(p["non_finite_elements"] for p in parts),
        "max_abs_error": max(errors) if errors else None,
        "relative_l2_error": float(np.sqrt(sum(p["_difference_sq"] for p in parts) / reference_sq)) if reference_sq else None,
        "rtol": tolerance.rtol,
        "atol": tolerance.atol,
    }


def compare_exact(out: np.ndarray, ref: np.ndarray) -> dict:
    """Bit-for-bit check (integer results, or floats whose every rounding the oracle reproduces)."""
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return {"passed": False, "reason": f"{out.dtype}{out.shape} differs from reference {ref.dtype}{ref.shape}"}
    same = out.view(np.uint8).reshape(out.size, -1) == ref.view(np.uint8).reshape(ref.size, -1)
    differing = int((~same.all(axis=1)).sum())
    return {"passed": differing == 0, "elements": int(out.size), "failing_elements": differing, "exact": True}
