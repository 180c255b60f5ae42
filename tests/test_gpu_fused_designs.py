"""GPU: the three fused softmax designs (kernels/softmax_designs.cu) against the float64 oracles, in
both modes, on fresh seeds: the launch policy's picks (the row kernel of kernels/fused_softmax.cu where the
policy says "row"), every design forced onto irregular shapes (1823x781, one row, one column, cols not a
multiple of 4 or of the cluster width, rows longer than a cluster's shared memory), cluster slices in
registers (SLICE_REGS > 0) and in shared memory, repeated and graph-replayed invocations, and poisoned
outputs.

`forced_configurations` lists every build this file asks for; tests/test_fused_designs.py compiles each
with nvcc on the CPU (no spills, no local memory)."""
import numpy as np
import pytest

from launchlab.chapters.fusion import plans
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


def module(defines, family=fused_policy.FAMILY):
    from launchlab.gpu import build

    key = (family, tuple(sorted(defines.items())))
    if key not in _MODULES:
        _MODULES[key] = build.load_module(family, defines)
    return _MODULES[key]


def skip_without_clusters() -> None:
    """The cluster design needs thread-block clusters (compute capability 9.0): below it its tests are skipped."""
    from launchlab.gpu.device import compute_capability

    if compute_capability() < fused_policy.CLUSTER_CAPABILITY:
        pytest.skip(f"the cluster design needs compute capability 9.0; this GPU has {compute_capability()}")


def target_for(design, rows, cols, mode, sm_count, x=None, options=None, **choices):
    """A design's target; a narrow `lanes` choice picks the build's chunks a lane and is passed on at launch."""
    from launchlab.gpu import fused_designs as designs

    if design == "cluster":
        skip_without_clusters()
    options = dict(options or {}) | ({"lanes": choices["lanes"]} if design == "narrow" and "lanes" in choices else {})
    defines = fused_policy.design_defines(design, rows, cols, sm_count, **choices)
    return designs.make_target(design, module(defines), rows, cols, mode, x, **options)


def check(target, seed_index=0, label=""):
    """target.compute on a fresh fixture (poisoned first) against the oracle; returns the output."""
    x = workloads.rms_softmax_fixture(FRESH_SEED, seed_index, target.rows, target.cols)
    y = target.compute(x)
    function, tolerance = ORACLES[target.mode]
    result = oracles.compare_by_row_blocks(y, oracles.by_row_blocks(function, x), tolerance)
    described = target.describe() if hasattr(target, "describe") else {}
    assert result["passed"], f"seed {FRESH_SEED}, {target.name} {target.rows}x{target.cols} {label}: " \
                             f"{described} {result}"
    return y


# ---------------------------------------------------------------- the parameters of the cases below
# (shared with forced_configurations, so that the CPU compile test builds exactly what this file builds)
POLICY_SHAPES = {  # shapes of every kind (the design the old declared policy picked on a 132-SM H200)
    (4096, 128): "narrow", (4096, 512): "narrow", (1, 1): "narrow", (3, 257): "narrow", (2, 509): "narrow",
    (4096, 1024): "row", (4096, 4096): "row", (128, 65536): "row", (1823, 781): "row", (33, 1030): "row",
    (9, 65536): "row", (132, 131072): "row",
    (3, 131075): "cluster", (128, 131072): "cluster", (128, 262144): "cluster", (16, 300000): "cluster",
    (2, 1_000_003): "split", (8, 458753): "split"}
LANES = [1, 2, 4, 8, 16, 32]
LANES_SHAPE = (77, 29)  # cols % 4 = 1: rows start at every alignment; 8 chunks, which one lane still holds
NARROW_IRREGULAR = [(1823, 781, 32), (1, 1, 1), (1, 1, 32), (5, 1, 4), (1, 3, 8), (37, 17, 2), (64, 1021, 32),
                    (64, 1024, 32), (100, 128, 8), (99, 130, 16), (40000, 6, 1)]
NARROW_STRIDE = (300_000, 33, {"lanes": 4, "block": 32})
SCALAR_CASES = [  # (rows, cols, floats a lane, lanes): the scalar build at every lane count and odd lengths
    (77, 29, 1, 32), (77, 29, 2, 16), (77, 29, 4, 8), (77, 29, 8, 4), (3, 8, 8, 1), (5, 15, 8, 2), (1, 1, 1, 1),
    (1, 1, 8, 32), (40000, 6, 1, 8), (1823, 255, 8, 32), (33, 256, 8, 32), (4097, 3, 4, 1), (129, 97, 4, 32)]
SCALAR_UNALIGNED = (301, 37)  # x and y views one float past a 16-byte boundary (no alignment is needed)
CLUSTER_WIDTHS = [1, 2, 4, 8, 16]
CLUSTER_SHAPES = [(3, 4099), (5, 1), (1, 1), (2, 31), (1823, 781), (7, 20001)]
CLUSTER_PLACES = {"policy": {}, "shared": {"slice_regs": 0}}  # the slice where the config puts it, or forced to shared
CLUSTER_LARGE = [(2, 450_001, 16), (3, 228_001, 8), (128, 65536, 4), (4, 57337, 2)]  # the last: CLUSTER_SLICE_BYTES
CLUSTER_REGISTERS = [  # (rows, cols, choices): slices in registers, SLICE_REGS > 0
    (3, 131075, {"slice_regs": 16}),              # 16 blocks x 16 chunks per thread
    (128, 131072, {}),                            # the policy's config at the sweep's 128 x 131072: 8 chunks
    (5, 8001, {"cluster": 4, "slice_regs": 2}),   # slices of 501 (the last 498) of 2 x 256 chunks, rows unaligned
    (3, 30001, {"cluster": 8, "block": 128}),     # 128 threads x 8 chunks
    (1, 5, {"cluster": 16}),                      # 2 chunks: fourteen blocks of the cluster hold nothing
    (2, 31, {"cluster": 16, "slice_regs": 4})]    # more registers than the slice needs
SPLIT_CASES = [
    (1, 1, {}, True), (3, 1, {}, True), (1, 1_000_003, {}, True),          # one row over every resident block
    (2, 1_000_003, {}, True),                  # longer than a cluster's shared memory, kept over many pieces
    (2, 1_000_003, {"pieces": 8}, False),      # the same over 8 pieces: too long to keep, x read twice
    (3, 70001, {"pieces": 1}, False), (5, 4097, {"pieces": 3}, True),     # one piece past the chip: streamed
    (300, 5001, {}, True),                                                  # more rows than resident blocks
    (600, 3001, {"pieces": 2}, True),                                       # several grid steps with barriers
    (1823, 781, {"blocks_per_sm": 1}, True)]
REPEATED = [("split", 2, 1_000_003), ("split", 1, 4099), ("cluster", 3, 4099), ("cluster", 3, 131075),
            ("narrow", 1823, 781)]
POISONED = {"narrow": ("narrow", {}), "cluster-registers": ("cluster", {}),
            "cluster-shared": ("cluster", {"slice_regs": 0}), "split": ("split", {})}
POISON_SHAPE = (9, 1021)  # the longest unaligned row 32 lanes x 8 chunks hold


def forced_configurations(sm_count: int) -> list[tuple[str, dict]]:
    """(design, defines) of every softmax_designs build this file loads on a GPU of `sm_count` SMs."""
    found = []
    for shape, design in POLICY_SHAPES.items():
        if design != "row":
            found.append((design, fused_policy.design_defines(design, *shape, sm_count)))
    found += [("narrow", fused_policy.design_defines("narrow", *LANES_SHAPE, sm_count, lanes=lanes)) for lanes in LANES]
    found += [("narrow", fused_policy.design_defines("narrow", rows, cols, sm_count, lanes=lanes))
              for rows, cols, lanes in NARROW_IRREGULAR]
    found.append(("narrow", fused_policy.design_defines("narrow", *NARROW_STRIDE[:2], sm_count, **NARROW_STRIDE[2])))
    found += [("narrow", fused_policy.design_defines("narrow", rows, cols, sm_count, row_chunks=per_lane, scalar=1))
              for rows, cols, per_lane, _ in SCALAR_CASES]
    found += [("cluster", fused_policy.design_defines("cluster", rows, cols, sm_count, cluster=width, **place))
              for width in CLUSTER_WIDTHS for rows, cols in CLUSTER_SHAPES for place in CLUSTER_PLACES.values()]
    found += [("cluster", fused_policy.design_defines("cluster", rows, cols, sm_count, cluster=width, slice_regs=0))
              for rows, cols, width in CLUSTER_LARGE]
    found += [("cluster", fused_policy.design_defines("cluster", rows, cols, sm_count, **choices))
              for rows, cols, choices in CLUSTER_REGISTERS]
    found += [(design, fused_policy.design_defines(design, rows, cols, sm_count)) for design, rows, cols in REPEATED]
    found += [(design, fused_policy.design_defines(design, *POISON_SHAPE, sm_count, **choices))
              for design, choices in POISONED.values()]
    found.append(("split", fused_policy.design_defines("split", 1, 1, sm_count)))
    found.append(("cluster", fused_policy.design_defines("cluster", 513, 1000, sm_count, cluster=2)))
    found.append(("narrow", fused_policy.design_defines("narrow", 513, 1000, sm_count)))
    found.append(("narrow", fused_policy.design_defines("narrow", 4, 128, sm_count, row_chunks=1)))
    found.append(("cluster", fused_policy.design_defines("cluster", 3, 131075, sm_count, cluster=16, slice_regs=16)))
    found.append(("cluster", fused_policy.design_defines("cluster", 5, 8001, sm_count, cluster=4, slice_regs=1)))
    return found


# ---------------------------------------------------------------- the policy's picks
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", list(POLICY_SHAPES))
def test_policy_pick_matches_oracle(device, shape, mode):
    """The fused kernel the chapter runs for a shape (plans.fused_plan: the model's least prediction on this GPU)."""
    from launchlab.chapters.fusion.targets import make_fused

    plan = plans.fused_plan(*shape, device)
    built = {plan["module"]: module(plan["defines"], plan["family"])}
    target = make_fused(built, plan, *shape, mode, None)
    check(target, label=f"policy {plan['design']} {plan['defines']}")


# ---------------------------------------------------------------- narrow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lanes", LANES)
def test_narrow_every_lane_count(device, lanes, mode):
    """77 rows of 29: cols % 4 = 1, so rows start at every alignment and straddle chunks; 8 chunks at the worst
    alignment, so one lane (of at most NARROW_MAX_ROW_CHUNKS chunks) still holds a row."""
    target = target_for("narrow", *LANES_SHAPE, mode, device["sm_count"], lanes=lanes)
    assert target.lanes == lanes and target.lanes * target.row_chunks >= fused_policy.worst_chunks(*LANES_SHAPE)
    check(target)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, lanes", NARROW_IRREGULAR)
def test_narrow_irregular_shapes(device, rows, cols, lanes, mode):
    check(target_for("narrow", rows, cols, mode, device["sm_count"], lanes=lanes))


@pytest.mark.parametrize("mode", MODES)
def test_narrow_grid_strides_past_the_resident_blocks(device, mode):
    """More row groups than SMs x resident blocks: warps take several groups each."""
    rows, cols, choices = NARROW_STRIDE
    target = target_for("narrow", rows, cols, mode, device["sm_count"], **choices)
    (_, grid, block, _), = target.launches
    assert grid[0] * block[0] // target.lanes < target.rows
    check(target)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, per_lane, lanes", SCALAR_CASES)
def test_scalar_narrow_every_lane_count_and_odd_lengths(device, rows, cols, per_lane, lanes, mode):
    """The scalar build: `per_lane` floats a lane, `lanes` lanes a row (forced, or the fewest that hold it), a
    warp per group of rows (the grid covers every row, 40000 rows included)."""
    target = target_for("narrow", rows, cols, mode, device["sm_count"], row_chunks=per_lane, scalar=1, lanes=lanes)
    (_, grid, block, _), = target.launches
    assert target.scalar and target.lanes == lanes and lanes * per_lane >= cols
    assert grid[0] * (block[0] // lanes) >= rows
    check(target)


@pytest.mark.parametrize("mode", MODES)
def test_scalar_narrow_takes_unaligned_rows(device, mode):
    """x and y one float past a 16-byte boundary (views into larger buffers, launched directly: the target refuses
    unaligned views, the kernel does not need them): 4-byte loads need no alignment, and the floats around the views
    are left as they were."""
    import cupy

    rows, cols = SCALAR_UNALIGNED
    defines = fused_policy.design_defines("narrow", rows, cols, device["sm_count"], row_chunks=2, scalar=1)
    x_host = workloads.rms_softmax_fixture(FRESH_SEED, 3, rows, cols)
    x_buffer = cupy.full(rows * cols + 2, 7.0, dtype=cupy.float32)
    x_buffer[1:-1] = cupy.asarray(x_host).ravel()
    y_buffer = cupy.full(rows * cols + 2, np.nan, dtype=cupy.float32)
    kernel = module(defines).kernel(fused_policy.KERNELS["narrow"][mode])
    lanes = fused_policy.narrow_lanes(rows, cols, 2, scalar=True)
    grid = -(-rows // (defines["BLOCK"] // lanes))
    kernel((grid,), (defines["BLOCK"],), (x_buffer[1:-1], y_buffer[1:-1], np.int32(rows), np.int32(cols),
                                          np.int32(lanes)))
    cupy.cuda.get_current_stream().synchronize()
    y = cupy.asnumpy(y_buffer[1:-1]).reshape(rows, cols)
    assert np.isnan(cupy.asnumpy(y_buffer[[0, -1]])).all()
    function, tolerance = ORACLES[mode]
    result = oracles.compare_by_row_blocks(y, oracles.by_row_blocks(function, x_host), tolerance)
    assert result["passed"], f"seed {FRESH_SEED}: {result}"


# ---------------------------------------------------------------- cluster
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", list(CLUSTER_PLACES))
@pytest.mark.parametrize("width", CLUSTER_WIDTHS)
@pytest.mark.parametrize("rows, cols", CLUSTER_SHAPES)
def test_cluster_every_width(device, rows, cols, width, place, mode):
    """cols not a multiple of 4 nor of the width; one column leaves all but one block empty. Each slice where
    cluster_config puts it (registers, but shared memory for 7 x 20001 in one block) and forced to shared memory."""
    target = target_for("cluster", rows, cols, mode, device["sm_count"], cluster=width, **CLUSTER_PLACES[place])
    assert (target.shared_bytes == 0) == target.in_registers
    if place == "shared":
        assert target.slice_regs == 0 and target.shared_bytes == 16 * -(-fused_policy.worst_chunks(rows, cols) // width)
    check(target)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, width", CLUSTER_LARGE)
def test_cluster_large_slices(device, rows, cols, width, mode):
    """Slices past 48 KiB (the opt-in dynamic shared memory), up to CLUSTER_SLICE_BYTES per block (112 KiB, where
    cluster_config stops), in shared memory."""
    target = target_for("cluster", rows, cols, mode, device["sm_count"], cluster=width, slice_regs=0)
    assert target.shared_bytes > 48 * 1024
    check(target)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, choices", CLUSTER_REGISTERS)
def test_cluster_slices_in_registers(device, rows, cols, choices, mode):
    """SLICE_REGS > 0: each thread keeps up to SLICE_REGS chunks of its block's slice in registers, no dynamic
    shared memory; unaligned rows, a short last slice, empty blocks, a smaller block."""
    target = target_for("cluster", rows, cols, mode, device["sm_count"], **choices)
    assert target.slice_regs > 0 and target.shared_bytes == 0
    assert target.slice_regs * target.block >= -(-fused_policy.worst_chunks(rows, cols) // target.cluster)
    check(target, seed_index=1)


def test_cluster_keeps_slices_of_16_chunks_a_thread_in_registers(device):
    """3 x 131075 over 16 blocks of 256 threads: 2049 chunks a slice, 16 chunks a thread in registers."""
    skip_without_clusters()
    target = target_for("cluster", 3, 131075, "rms", device["sm_count"], cluster=16, slice_regs=16)
    assert target.describe() == {"design": "cluster", "grid": 3 * 16, "block": 256, "shared_bytes": 0,
                                 "cluster": 16, "slice_regs": 16, "in_registers": True}
    check(target, seed_index=2)


def test_cluster_puts_a_slice_longer_than_its_registers_in_shared_memory(device):
    """Slices of 501 chunks (5 x 8001 over 4 blocks), 256 in registers at most: the kernel and the target both
    keep them in shared memory instead."""
    target = target_for("cluster", 5, 8001, "rms", device["sm_count"], cluster=4, slice_regs=1)
    assert not target.in_registers and target.shared_bytes == 16 * 501
    check(target, seed_index=3)


# ---------------------------------------------------------------- split
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, cols, options, kept", SPLIT_CASES)
def test_split_shapes(device, rows, cols, options, kept, mode):
    target = target_for("split", rows, cols, mode, device["sm_count"], options=options)
    assert target.describe()["kept_on_chip"] == kept, target.describe()
    check(target)


@pytest.mark.parametrize("design, rows, cols", REPEATED)
def test_repeated_invocations_and_graph_replay(backend, device, design, rows, cols):
    """The split design's stamped exchange words stay in a consistent state after each invocation:
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
@pytest.mark.parametrize("case", list(POISONED))
def test_poisoned_output_fails(backend, device, case):
    """An output the kernel never wrote fails: poisoned and not invoked, or one row's worth restored."""
    design, choices = POISONED[case]
    rows, cols = POISON_SHAPE
    target = target_for(design, rows, cols, "rms", device["sm_count"], **choices)
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

    defines = fused_policy.design_defines("narrow", 4, 128, device["sm_count"], row_chunks=1)
    with pytest.raises(ValueError, match="does not fit 32 lanes"):
        designs.NarrowRows(module(defines), 4, 129, "rms")  # 33 chunks at the worst alignment: 32 lanes x 1 hold 32
    with pytest.raises(ValueError, match="power of two"):
        designs.NarrowRows(module(defines), 4, 12, "rms", lanes=3)
