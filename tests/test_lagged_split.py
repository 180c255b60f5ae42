"""The lagged split design's plans (kernels/lagged_split.cu; fused_policy.lag_choices, plans.lag_variants): a grid
whose blocks wait for one another must be resident at once and hold a row's pieces in one grid step, or a run on
the device hangs; a lag whose pieces outgrow the L2 reads x twice from DRAM. Checked on random shapes (a fresh seed,
printed on failure) and GPUs of several sizes. Only the calibration times the design: the policy does not offer it."""
import math
import random

import pytest

from launchlab.chapters.fusion import plans
from launchlab.model import fused_cost, fused_policy
from launchlab.model.fused_policy import worst_chunks

SEED = random.SystemRandom().randrange(1 << 30)
SMS = (132, 114, 78)  # an H200, an H100 PCIe, a smaller part


def device(sms: int) -> dict:
    return {"sm_count": sms, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448}


def random_shapes(count: int = 300) -> list[tuple[int, int]]:
    """The plane's distribution: rows log-uniform in 1-65536, row lengths in 1-2^21 floats, matrices 4 KiB-256 MiB."""
    rng = random.Random(SEED)
    shapes = []
    while len(shapes) < count:
        rows, cols = int(math.exp(rng.uniform(0, math.log(65537)))), int(math.exp(rng.uniform(0, math.log(1 << 21))))
        if fused_cost.MIN_BYTES <= 4 * rows * cols <= fused_cost.MAX_BYTES:
            shapes.append((rows, cols))
    return shapes


def valid_pieces(rows: int, cols: int, grid: int) -> dict:
    """{pieces: piece bytes} of every piece count the kernel can run with at this shape."""
    chunks = worst_chunks(rows, cols)
    found = {p: 16 * -(-chunks // p) for p in range(1, grid + 1)
             if grid % p == 0 and grid // p <= rows and p <= 2 * fused_policy.LAG_BLOCK}
    return {p: size for p, size in found.items() if size >= fused_policy.LAG_MIN_PIECE_BYTES}


@pytest.mark.parametrize("sms", SMS)
def test_every_lag_choice_is_resident_in_one_grid_step_and_keeps_its_lag_in_the_l2(sms):
    grid = fused_policy.lag_grid(fused_policy.LAG_BLOCK, sms)
    assert grid == 2 * sms  # blocks of 512 threads, 1024 threads an SM
    for rows, cols in random_shapes():
        where = (SEED, sms, rows, cols)
        choices = fused_policy.lag_choices(rows, cols, sms)
        if cols < fused_policy.LAG_MIN_COLS:
            assert choices == [], where
            continue
        sizes = valid_pieces(rows, cols, grid)
        assert bool(choices) <= bool(sizes), where
        for choice in choices:
            pieces, lag = choice["pieces"], choice["lag"]
            assert pieces in sizes, where  # divides the grid, a row for every block of a step, two slots a thread
            nearest = min(abs(math.log(size / fused_policy.LAG_PIECE_BYTES)) for size in sizes.values())
            assert abs(math.log(sizes[pieces] / fused_policy.LAG_PIECE_BYTES)) == nearest, where
            steps = -(-rows * pieces // grid)
            assert lag in (1, steps) and 1 <= lag <= steps, where
            assert lag * grid * sizes[pieces] <= fused_policy.LAG_L2_BUDGET, where
        assert len({(c["pieces"], c["lag"]) for c in choices}) == len(choices), where


def test_only_the_calibration_times_the_lagged_design():
    offered = calibrated = 0
    for rows, cols in random_shapes(120):
        offered += sum(p["design"] == "lag" for p in plans.candidates(rows, cols, device(132)))
        lagged = [p for p in plans.candidates(rows, cols, device(132), every_build=True) if p["design"] == "lag"]
        assert [p["options"] for p in lagged] == fused_policy.lag_choices(rows, cols, 132), (SEED, rows, cols)
        assert {p["module"] for p in lagged} <= {"lagged_split_b512_u4"}
        calibrated += len(lagged)
    assert offered == 0 and calibrated > 0, SEED


@pytest.mark.parametrize("rows, cols, pieces, lags", [
    (47, 126781, 12, [1, 3]),   # 507 KB rows: 12 pieces of 42 KB, 22 rows a step, every step's pieces in 20 MB
    (2, 1726970, 264, [1, 2]),  # one piece a block, two steps
    (12, 1172219, 132, [1]),    # x of 56 MB: a lag of every step would outgrow the L2 budget
    (1000, 4097, 1, [1, 4]),    # a row a block
])
def test_lag_choices_at_known_shapes(rows, cols, pieces, lags):
    assert fused_policy.lag_choices(rows, cols, 132) == [{"pieces": pieces, "lag": lag} for lag in lags]


def test_the_model_sees_a_second_read_of_x_and_a_wait_only_without_a_lag():
    rows, cols = 47, 126781
    (plan, _) = plans.lag_variants(rows, cols, 132)
    seen = fused_cost.geometry(plan, rows, cols, device(132))
    assert seen.design == "lag" and seen.reread == 1.0 and seen.grid == 0.0
    assert seen.tasks == rows * 12 and seen.slots == 264
    waiting = fused_cost.geometry(plan | {"options": {"pieces": 12, "lag": 0}}, rows, cols, device(132))
    assert waiting.grid == 1.0
    for l2 in fused_cost.L2_STATES:
        assert math.isfinite(fused_cost.predict(plan, rows, cols, device(132), l2, fused_cost.FITTED))
