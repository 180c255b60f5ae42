"""GPU: the lagged split design (kernels/lagged_split.cu) against the float64 oracles, on shapes drawn with a fresh
seed (odd row lengths, so rows start off 16-byte boundaries), at lags of 0, 1, 2 and every grid step, both modes:
each output poisoned first, and each target invoked twice, so the second call finds its slots stamped by the first
(the epoch the blocks expect moves on)."""
import numpy as np
import pytest

from launchlab.chapters.fusion import plans
from launchlab.model import fused_policy, oracles

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
ORACLES = {"rms": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
           "plain": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}


def shapes(count: int = 6) -> list[tuple[int, int]]:
    """A row a block (hundreds of rows of 4K-9K floats), a few rows of 10K-300K floats, one or two rows of 0.5-2M."""
    rng = np.random.default_rng(FRESH_SEED)
    found = [(int(rng.integers(300, 700)), int(rng.integers(4097, 9000)) | 1)]
    found += [(int(rng.integers(3, 60)), int(rng.integers(10_000, 300_000)) | 1) for _ in range(count - 2)]
    found += [(int(rng.integers(1, 3)), int(rng.integers(500_000, 2_000_000)) | 1)]
    return found


@pytest.fixture(scope="module")
def built():
    from launchlab.gpu import build

    (plan, *_) = plans.lag_variants(300, 4097, 132)
    return build.load_module(plan["family"], plan["defines"])


@pytest.mark.parametrize("mode", ["plain", "rms"])
def test_lagged_rows_match_the_oracle_at_every_lag(built, mode):
    import cupy

    from launchlab.gpu import device
    from launchlab.gpu.fused_designs import LagRow

    function, tolerance = ORACLES[mode]
    grid = fused_policy.lag_grid(fused_policy.LAG_BLOCK, device.sm_count())
    for rows, cols in shapes():
        x = (np.random.default_rng(FRESH_SEED + rows + cols).standard_normal((rows, cols)) * 3.0).astype(np.float32)
        expected = function(x.astype(np.float64))
        pieces = fused_policy.lag_pieces(rows, cols, grid)
        steps = -(-rows * pieces // grid)
        for lag in sorted({0, 1, 2, steps}):
            target = LagRow(built, rows, cols, mode, cupy.asarray(x), pieces=pieces, lag=lag)
            for call in range(2):
                target.y.fill(float("nan"))
                target.invoke()
                got = cupy.asnumpy(target.y)
                where = f"seed {FRESH_SEED}, {rows}x{cols} {mode} pieces {pieces} lag {lag} call {call}"
                assert np.isfinite(got).all(), where
                result = oracles.compare(got, expected, tolerance)
                assert result["passed"], f"{where}: {result}"


def test_a_grid_that_cannot_hold_a_rows_pieces_in_one_step_is_refused(built):
    import cupy

    from launchlab.gpu import device
    from launchlab.gpu.fused_designs import LagRow

    grid = fused_policy.lag_grid(fused_policy.LAG_BLOCK, device.sm_count())
    x = cupy.zeros((2, 100_001), dtype=cupy.float32)
    with pytest.raises(ValueError, match="pieces a row must divide the grid"):
        LagRow(built, 2, 100_001, "plain", x, pieces=grid - 1)
    with pytest.raises(ValueError, match="steps of at most 2 rows"):
        LagRow(built, 2, 100_001, "plain", x, pieces=1)  # a step of `grid` rows: blocks with no row would wait
    with pytest.raises(ValueError, match="a lag of -1"):
        LagRow(built, 2, 100_001, "plain", x, pieces=grid, lag=-1)
