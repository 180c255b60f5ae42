"""GPU: the one online reduction per row (row_helpers.cuh: every thread's max, sum of exp(x - its own max) and sum of
squares, combined once) where it could go wrong: threads whose maxima lie far below the row's (their sums are
rescaled to nothing), threads of a block that hold no element of the row, rows of equal values, rows whose
largest element sits in the last, straddling chunk, and rows of negative numbers only (a warp's max is taken on an
integer key that orders like the float); in the row kernel's three tiers and every narrow lane count,
both modes, against the float64 oracles."""
import numpy as np
import pytest

from launchlab.chapters.fusion import plans
from launchlab.model import fused_policy, oracles

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
ORACLES = {"rms": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
           "plain": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}
OPTIN = 232448
_MODULES = {}


def matrix(kind: str, rows: int, cols: int) -> np.ndarray:
    """Rows that stress the combination of per-thread statistics: a steep ramp (each thread's max tens of units
    below the next one's, largest at the end), equal values, noise with one large spike at a random place, negative
    numbers only (far below zero, spread over tens of units)."""
    rng = np.random.default_rng(FRESH_SEED + rows * 131 + cols)
    if kind == "ramp":
        x = np.tile(np.linspace(-60.0, 60.0, cols), (rows, 1)) + rng.normal(0.0, 0.1, (rows, cols))
    elif kind == "equal":
        x = np.full((rows, cols), 3.25)
    elif kind == "negative":
        x = -100.0 - 30.0 * np.abs(rng.normal(0.0, 1.0, (rows, cols)))
    else:
        x = rng.normal(0.0, 1.0, (rows, cols))
        x[np.arange(rows), rng.integers(0, cols, rows)] += 40.0
    return x.astype(np.float32)


def module(family: str, defines: dict):
    from launchlab.gpu import build

    key = (family, tuple(sorted(defines.items())))
    if key not in _MODULES:
        _MODULES[key] = build.load_module(family, defines)
    return _MODULES[key]


def check(plan: dict, rows: int, cols: int, mode: str, kind: str) -> None:
    from launchlab.chapters.fusion.targets import make_fused

    x = matrix(kind, rows, cols)
    target = make_fused({plan["module"]: module(plan["family"], plan["defines"])}, plan, rows, cols, mode, None)
    function, tolerance = ORACLES[mode]
    result = oracles.compare(target.compute(x), function(x.astype(np.float64)), tolerance)
    assert result["passed"], f"seed {FRESH_SEED}, {plan['tag']} {rows}x{cols} {mode} {kind}: {result}"


def row_plan(block: int, tier: str, rows: int, cols: int) -> dict:
    """The row kernel forced into a block size and tier (the register tier's unrolling for registers)."""
    unroll = plans.UNROLL[tier]
    defines = {"BLOCK": block, "REG_CHUNKS": plans.REG_CHUNKS, "UNROLL": unroll, "MIN_BLOCKS": plans.min_blocks(block)}
    shared = 16 * fused_policy.worst_chunks(rows, cols) if tier == "shared" else 0
    assert plans.fused_tier(rows, cols, block, shared) == tier
    return plans._row({"defines": defines, "block": block, "shared_bytes": shared, "tier": tier,
                       "module": plans.row_kernel_module(defines)})


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("kind", ["ramp", "equal", "spike", "negative"])
@pytest.mark.parametrize("block, tier, rows, cols", [
    (32, "registers", 5, 1), (32, "registers", 7, 509), (128, "registers", 3, 5), (128, "registers", 4, 1073),
    (1024, "registers", 2, 3), (256, "shared", 3, 5001), (64, "streamed", 2, 4099), (1024, "streamed", 1, 70001),
])
def test_row_kernel_online_reduction(block, tier, rows, cols, kind, mode):
    """Blocks far wider than their row leave most threads without an element (their statistics are (-inf, 0))."""
    check(row_plan(block, tier, rows, cols), rows, cols, mode, kind)


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("kind", ["ramp", "equal", "spike", "negative"])
@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16, 32])
def test_narrow_online_reduction(lanes, kind, mode):
    """Rows of 29 floats (every alignment) at every lane count, 8 chunks a lane, the rows one more than a block
    holds, so that the last block's groups past the last row hold nothing."""
    rows = plans.NARROW_BLOCK // lanes + 1
    defines = fused_policy.design_defines("narrow", rows, 29, 132, row_chunks=8, block=plans.NARROW_BLOCK)
    plan = plans.design_plan("narrow", defines, {"lanes": lanes})
    check(plan, rows, 29, mode, kind)


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("kind", ["ramp", "spike", "negative"])
@pytest.mark.parametrize("rows, cols", [(11, 375), (3, 259), (3, 750), (1, 1073), (2, 1021)])
def test_latency_row_builds(rows, cols, kind, mode):
    """The registers tier with 2 chunks a thread and 64-256 threads (plans.latency_row_variants)."""
    (plan,) = plans.latency_row_variants(rows, cols)
    check(plan, rows, cols, mode, kind)


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("rows, cols, row_chunks", [(201, 6, 1), (129, 1, 1), (65, 29, 2), (33, 127, 4)])
def test_latency_narrow_builds(rows, cols, row_chunks, mode):
    """Narrow builds in blocks of 128 threads: rows one or two past a block's, so the last block is part empty."""
    defines = fused_policy.design_defines("narrow", rows, cols, 132, row_chunks=row_chunks,
                                          block=plans.LATENCY_NARROW_BLOCK)
    check(plans.design_plan("narrow", defines), rows, cols, mode, "spike")


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("kind", ["ramp", "spike", "negative"])
def test_the_calibrations_thin_row_builds(kind, mode):
    """The calibration's thinner row builds (plans.spread_row_variants, plans.registers_only_variants: 1, 2 or 4
    chunks a thread, the registers-only kernel at the SM's full occupancy) on random shapes of a fresh seed, odd
    lengths and unaligned rows included."""
    rng = np.random.default_rng(FRESH_SEED)
    for _ in range(4):
        rows, cols = int(rng.integers(1, 300)), int(rng.integers(33, 16384))
        for plan in plans.spread_row_variants(rows, cols) + plans.registers_only_variants(rows, cols):
            check(plan, rows, cols, mode, kind)


@pytest.mark.parametrize("mode", ["plain", "rms"])
@pytest.mark.parametrize("kind", ["ramp", "spike", "negative"])
def test_the_calibrations_full_occupancy_narrow_builds(kind, mode):
    """kernels/narrow_full.cu (plans.narrow_full_twin: the narrow builds of 1 or 2 chunks a lane at 2048 threads an
    SM) on random shapes of a fresh seed, every lane count, odd lengths and unaligned rows included."""
    rng = np.random.default_rng(FRESH_SEED + 1)
    for _ in range(6):
        rows, cols = int(rng.integers(1, 40000)), int(rng.integers(1, 254))
        twins = [plans.narrow_full_twin(p) for p in plans.candidates(rows, cols, {"sm_count": 132,
                 "compute_capability": "9.0", "shared_bytes_per_block_optin": OPTIN})]
        for plan in filter(None, twins):
            check(plan, rows, cols, mode, kind)


def test_the_registers_only_row_refuses_a_row_it_cannot_hold():
    from launchlab.gpu.targets import RegistersRow

    (plan, *_) = plans.registers_only_variants(4, 1000)
    built = module(plan["family"], plan["defines"])
    capacity = plan["defines"]["REG_CHUNKS"] * plan["defines"]["BLOCK"]
    with pytest.raises(ValueError, match="does not fit"):
        RegistersRow(built, 4, 4 * capacity + 1)
