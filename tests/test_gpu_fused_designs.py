"""GPU: the three fused softmax designs (kernels/softmax_designs.cu) against the float64 oracles, in
both modes, on fresh seeds: the launch policy's picks, every design forced onto irregular shapes
(1823x781, one row, one column, cols not a multiple of 4 or of the cluster width, rows longer
than a cluster's shared memory), repeated and graph-replayed invocations, and poisoned outputs."""
import numpy as np
import pytest

from launchlab.model import fused_policy, oracles
from launchlab.model import workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
ORACLES = {"rms": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
           "plain": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}
MODES = ["rms", "plain"]


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapters


@pytest.fixture(scope="module")
def device(backend):
    from launchlab.gpu.device import identity

    return identity()


_MODULES = {}


def module(defines):
    from launchlab.gpu import build

    key = tuple(sorted(defines.items()))
    if key not in _MODULES:
        _MODULES[key] = build.load_module(fused_policy.FAMILY, defines)
    return _MODULES[key]


def target_for(design, rows, cols, mode, sm_count, x=None, options=None, **choices):
    from launchlab.gpu import fused_designs as designs

    defines = fused_policy.design_defines(design, rows, cols, sm_count, **choices)
    return designs.make_target(design, module(defines), rows, cols, mode, x, **(options or {}))


def check(target, seed_index=0, label=""):
    """target.compute on a fresh fixture (poisoned first) against the oracle; returns the output."""
    x = workloads.rms_softmax_fixture(FRESH_SEED, seed_index, target.rows, target.cols)
    y = target.compute(x)
    function, tolerance = ORACLES[target.mode]
    result = oracles.compare_by_row_blocks(y, oracles.by_row_blocks(function, x), tolerance)
    assert result["passed"], f"seed {FRESH_SEED}, {target.name} {target.rows}x{target.cols} {label}: " \
                             f"{target.describe()} {result}"
    return y


# ---------------------------------------------------------------- the policy's picks
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(4096, 128), (4096, 512), (4096, 1024), (4096, 4096), (128, 65536),
                                   (1823, 781), (1, 1), (3, 257), (33, 1030), (9, 65536), (8, 65536),
                                   (2, 1_000_003)])
def test_policy_pick_matches_oracle(device, shape, mode):
    from launchlab.gpu import fused_designs as designs

    design, config = fused_policy.launch_policy(*shape, device)
    target = designs.make_target(design, module(config["defines"]), *shape, mode)
    check(target, label=f"policy {design} {config['defines']}")


# ---------------------------------------------------------------- narrow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16, 32])
def test_narrow_every_lane_count(device, lanes, mode):
    """77 rows of 61: cols % 4 = 1, so rows start at every alignment and straddle chunks."""
    check(target_for("narrow", 77, 61, mode, device["sm_count"], lanes=lanes))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, lanes", [
    (1823, 781, 32), (1, 1, 1), (1, 1, 32), (5, 1, 4), (1, 3, 8), (37, 17, 2), (64, 1021, 32), (64, 1024, 32),
    (100, 128, 8), (99, 130, 16), (40000, 6, 1)])
def test_narrow_irregular_shapes(device, rows, cols, lanes, mode):
    check(target_for("narrow", rows, cols, mode, device["sm_count"], lanes=lanes))


@pytest.mark.parametrize("mode", MODES)
def test_narrow_grid_strides_past_the_resident_blocks(device, mode):
    """More row groups than SMs x resident blocks: warps take several groups each."""
    target = target_for("narrow", 300_000, 33, mode, device["sm_count"], lanes=4, block=32)
    (_, grid, block, _), = target.launches
    assert grid[0] * block[0] // target.lanes < target.rows
    check(target)


# ---------------------------------------------------------------- cluster
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("rows, cols", [(3, 4099), (5, 1), (1, 1), (2, 31), (1823, 781), (7, 20001)])
def test_cluster_every_width(device, rows, cols, width, mode):
    """cols not a multiple of 4 nor of the width; one column leaves all but one block empty."""
    check(target_for("cluster", rows, cols, mode, device["sm_count"], cluster=width))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, width", [(2, 450_001, 16), (3, 230_001, 8), (128, 65536, 4), (4, 65537, 2)])
def test_cluster_large_slices(device, rows, cols, width, mode):
    """Slices past 48 KiB (the opt-in dynamic shared memory), up to about 110 KiB per block."""
    target = target_for("cluster", rows, cols, mode, device["sm_count"], cluster=width)
    assert target.shared_bytes > 48 * 1024
    check(target)


# ---------------------------------------------------------------- split
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, options, kept", [
    (1, 1, {}, True), (3, 1, {}, True), (1, 1_000_003, {}, True),          # one row over every resident block
    (2, 1_000_003, {}, True),                  # longer than a cluster's shared memory, kept over 132 pieces
    (2, 1_000_003, {"pieces": 8}, False),      # the same over 8 pieces: too long to keep, x read twice
    (3, 70001, {"pieces": 2}, False), (5, 4097, {"pieces": 3}, True),
    (300, 5001, {}, True),                                                  # more rows than resident blocks
    (600, 3001, {"pieces": 2}, True),                                       # several grid steps with barriers
    (1823, 781, {"blocks_per_sm": 1}, True)])
def test_split_shapes(device, rows, cols, options, kept, mode):
    target = target_for("split", rows, cols, mode, device["sm_count"], options=options)
    assert (target.shared_bytes > 0) == kept, target.describe()
    check(target)


@pytest.mark.parametrize("design, rows, cols", [("split", 2, 1_000_003), ("split", 1, 4099), ("cluster", 3, 4099),
                                                ("narrow", 1823, 781)])
def test_repeated_invocations_and_graph_replay(backend, device, design, rows, cols):
    """The split design's per-row counters return to a consistent state after each invocation:
    back-to-back invocations, then a captured graph replayed, still match the oracle."""
    from launchlab.gpu.capture import GraphReplay

    target = target_for(design, rows, cols, "rms", device["sm_count"])
    for seed_index in range(3):
        target.load(workloads.rms_softmax_fixture(FRESH_SEED, seed_index, rows, cols))
        for _ in range(5):
            target.invoke()
    backend.synchronize()
    check(target, seed_index=4, label="after repeated invocations")
    replay = GraphReplay(target, backend.stream)
    for seed_index in (5, 6):
        x = workloads.rms_softmax_fixture(FRESH_SEED, seed_index, rows, cols)
        y = replay.compute(x)
        result = oracles.compare(y, oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
        assert result["passed"], f"seed {FRESH_SEED}, {design} graph replay: {result}"


def test_designs_share_one_input_buffer(device):
    """Several variants read the same matrix (x passed on), each with its own output."""
    first = target_for("narrow", 513, 1000, "rms", device["sm_count"])
    others = [target_for("cluster", 513, 1000, "rms", device["sm_count"], x=first.x, cluster=2),
              target_for("split", 513, 1000, "plain", device["sm_count"], x=first.x)]
    x = workloads.rms_softmax_fixture(FRESH_SEED, 7, 513, 1000)
    first.load(x)
    for target in [first] + others:
        assert target.x is first.x
        target.poison()
        target.invoke()
    for target in [first] + others:
        function, tolerance = ORACLES[target.mode]
        assert oracles.compare(target.output(), function(x), tolerance)["passed"], target.name


# ---------------------------------------------------------------- poison
@pytest.mark.parametrize("design", ["narrow", "cluster", "split"])
def test_poisoned_output_fails(backend, device, design):
    """An output the kernel never wrote fails: poisoned and not invoked, or one row's worth restored."""
    rows, cols = 9, 1021  # the longest unaligned row the narrow design holds
    target = target_for(design, rows, cols, "rms", device["sm_count"])
    x = workloads.rms_softmax_fixture(FRESH_SEED, 8, rows, cols)
    reference = oracles.rms_softmax(x)
    target.load(x)
    target.poison()
    backend.synchronize()
    result = oracles.compare(target.output(), reference, oracles.RMS_SOFTMAX_TOLERANCE)
    assert not result["passed"] and result["non_finite_elements"] == rows * cols
    y = check(target, seed_index=8)
    y[4, cols - 1] = np.nan  # a single unwritten element (the last of an unaligned row) is enough
    assert not oracles.compare(y, reference, oracles.RMS_SOFTMAX_TOLERANCE)["passed"]


def test_narrow_rejects_a_row_longer_than_its_registers(device):
    from launchlab.gpu import fused_designs as designs

    defines = fused_policy.design_defines("narrow", 4, 128, device["sm_count"], lanes=8, row_chunks=4)
    with pytest.raises(ValueError):
        designs.NarrowRows(module(defines), 4, 129, "rms")
