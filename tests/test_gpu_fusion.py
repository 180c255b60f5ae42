"""GPU: the fused row kernel (both modes, every tier), the copy, the cold-L2 flush, graphs of many calls and
the library baselines as Targets (stream launch and graph capture) against the float64 oracles, on
irregular shapes and fresh seeds."""
import numpy as np
import pytest

from launchlab.chapters import fusion
from launchlab.model import fused_policy, oracles, workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
ORACLES = {"rms": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
           "plain": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapters


@pytest.fixture(scope="module")
def stream(backend):
    return backend.stream


_MODULES = {}


def fused_module(block=None, defines=None):
    """The fused kernel compiled as the chapter compiles it: the policy's defines, or for a forced block
    size the register tier's unrolling and register budget."""
    from launchlab.gpu import build

    defines = defines or {"BLOCK": block, "REG_CHUNKS": fusion.REG_CHUNKS, "UNROLL": fusion.UNROLL["registers"],
                          "MIN_BLOCKS": fusion.min_blocks(block)}
    key = tuple(sorted(defines.items()))
    if key not in _MODULES:
        _MODULES[key] = build.load_module("fused_softmax", defines)
    return _MODULES[key]


def shared_limit():
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(0)["sharedMemPerBlockOptin"])


def sm_count():
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])


def check_fused(rows, cols, mode, block, shared_bytes, seed_index=0, expected_tier=None, defines=None):
    from launchlab.gpu.targets import FusedRow

    if expected_tier:
        reg_chunks = (defines or {}).get("REG_CHUNKS", fusion.REG_CHUNKS)
        assert fusion.fused_tier(rows, cols, block, shared_bytes, reg_chunks) == expected_tier
    x = workloads.rms_softmax_fixture(FRESH_SEED, seed_index, rows, cols)
    y = FusedRow(fused_module(block, defines), rows, cols, mode, shared_bytes).compute(x)
    function, tolerance = ORACLES[mode]
    result = oracles.compare(y, function(x), tolerance)
    assert result["passed"], f"seed {FRESH_SEED}, {rows}x{cols} {mode} block {block} shared {shared_bytes}: {result}"


@pytest.mark.parametrize("mode", ["rms", "plain"])
@pytest.mark.parametrize("shape", [(1823, 781), (1, 1), (3, 257), (33, 130), (64, 4096), (7, 6001), (5, 20001),
                                   (3, 70001), (2, 32768), (100, 8191), (131, 12345), (1000, 5003)])
def test_fused_policy_matches_oracle_on_fresh_seed(stream, shape, mode):
    """The policy's build for the shape on this GPU: few rows (fewer than SMs) hold rows of up to 8 x 1024
    chunks in registers, 8 chunks a thread; many rows of that length live in shared memory."""
    config = fusion.fused_config(*shape, shared_limit(), sm_count())
    check_fused(*shape, mode, config["block"], config["shared_bytes"], expected_tier=config["tier"],
                defines=config["defines"])


@pytest.mark.parametrize("mode", ["rms", "plain"])
@pytest.mark.parametrize("rows, cols, block, tier", [
    (7, 1023, 256, "registers"), (9, 509, 32, "registers"),
    (5, 20001, 256, "shared"), (6, 4099, 64, "shared"),
    (3, 70001, 1024, "streamed"), (4, 5003, 32, "streamed"), (2, 16384, 128, "streamed"),
])
def test_every_tier_matches_oracle(stream, rows, cols, block, tier, mode):
    """Each place a row can live, forced by the block size and the shared memory given; cols % 4 != 0 puts
    rows at every alignment, so edge chunks are read lane by lane."""
    shared = 16 * fused_policy.worst_chunks(rows, cols) if tier == "shared" else 0
    check_fused(rows, cols, mode, block, shared, seed_index=1, expected_tier=tier)


def test_unwritten_output_fails_and_misaligned_buffers_are_refused(stream):
    import cupy

    from launchlab.gpu.targets import FusedRow

    path = FusedRow(fused_module(64), 33, 300)
    x = workloads.rms_softmax_fixture(FRESH_SEED, 3, 33, 300)
    path.load(x)
    path.poison()  # never launched: every element stays NaN
    result = oracles.compare(path.output(), oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    assert not result["passed"] and result["non_finite_elements"] == x.size
    base = cupy.empty(33 * 300 + 1, dtype=cupy.float32)
    with pytest.raises(ValueError, match="16-byte boundaries"):
        FusedRow(fused_module(64), 33, 300, x=base[1:].reshape(33, 300))


def test_graph_of_many_calls_matches_oracle_and_holds_every_call(stream):
    """A graph32 replay computes what one call computes, and its graph holds 32 kernel nodes."""
    from launchlab.chapters.fusion.targets import graph_nodes, graph_of_calls
    from launchlab.gpu.targets import FusedRow

    config = fusion.fused_config(517, 1029, shared_limit(), sm_count())
    path = FusedRow(fused_module(defines=config["defines"]), 517, 1029, "plain", config["shared_bytes"])
    replay = graph_of_calls(path, stream)
    assert replay.setup["first_replay_us"] > 0 and graph_nodes(replay) == fusion.CALLS_PER_GRAPH
    x = workloads.rms_softmax_fixture(FRESH_SEED, 4, 517, 1029)
    result = oracles.compare(replay.compute(x), oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)
    assert result["passed"], f"seed {FRESH_SEED}: {result}"


def test_copy_graph_and_cold_flush_through_the_protocol(backend, stream):
    import cupy

    from launchlab.chapters.fusion.targets import graph_of_calls
    from launchlab.gpu import build
    from launchlab.gpu.instruments import KERNELS, ColdL2
    from launchlab.gpu.targets import DeviceCopy
    from launchlab.measure import protocol
    from launchlab.measure.variant import VariantId

    x = workloads.rms_softmax_fixture(FRESH_SEED, 5, 257, 1031)
    copy = DeviceCopy(cupy.asarray(x))
    assert np.array_equal(copy.compute(x), x)
    replay = graph_of_calls(copy, stream)
    assert np.array_equal(replay.compute(x), x)
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    instruments = build.load_module("instruments")
    assert all(r["local_bytes"] == 0 for r in instruments.resources(KERNELS).values())
    cold = ColdL2(instruments, int(properties["l2CacheSize"]), int(properties["multiProcessorCount"]))
    quick = protocol.MeasurementProtocol(warmups=1, rounds=2, cold_repeats=2)
    variant = protocol.Measured(VariantId("copy", "257x1031", "stream"), copy.invoke)
    samples = protocol.measure_cold([variant], backend, cold.flush, quick)
    assert len(samples) == 4 and all(0 < s["event_ms"] < 50 for s in samples)
    warm = protocol.measure_warm([protocol.Measured(VariantId("copy", "257x1031", "graph32"), replay.invoke,
                                                    large=True)], backend, quick)
    assert {s["measurement"] for s in warm} == {"warm_single", "warm_batch"}


def library(name, x, stream):
    from launchlab.chapters.fusion import baselines

    target, note = baselines.make_baseline(name, x, stream)
    if target is None:
        pytest.skip(f"{name} is not available here: {note}")
    return target


@pytest.mark.parametrize("name", fusion.LIBRARIES)
@pytest.mark.parametrize("shape", [(1823, 781), (3, 70001)])
def test_library_baseline_matches_plain_oracle(stream, name, shape):
    import cupy

    x = workloads.rms_softmax_fixture(FRESH_SEED, 6, *shape)
    target = library(name, cupy.empty(shape, dtype=cupy.float32), stream)
    assert target.name == name and target.version()
    result = oracles.compare(target.compute(x), oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)
    assert result["passed"], f"seed {FRESH_SEED}, {name} {shape}: {result}"


@pytest.mark.parametrize("name", fusion.LIBRARIES)
def test_library_captures_into_a_graph_of_many_calls_on_our_stream(stream, name):
    """cudnnSoftmaxForward, torch.softmax and the Triton kernel, captured 32 times under CuPy's stream capture
    on the chapter's stream and buffers, replay to the oracle's result."""
    import cupy

    from launchlab.chapters.fusion.targets import graph_nodes, graph_of_calls

    shape = (333, 1029)
    x = workloads.rms_softmax_fixture(FRESH_SEED, 7, *shape)
    target = library(name, cupy.empty(shape, dtype=cupy.float32), stream)
    target.compute(x)  # first call outside the capture: Triton compiles, cuDNN and torch initialise
    replay = graph_of_calls(target, stream)
    nodes = graph_nodes(replay)
    assert nodes is None or nodes % fusion.CALLS_PER_GRAPH == 0, nodes
    result = oracles.compare(replay.compute(x), oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)
    assert result["passed"], f"seed {FRESH_SEED}, {name} graph: {result}"


# ---------------------------------------------------------------- the float4 copy kernel (the copy ceiling's second side)
@pytest.mark.parametrize("elements", [1, 3, 4, 5, 1023, 4 * 256 * 4, 4 * 256 * 4 + 7, 1_000_003])
def test_copy_kernel_copies_every_length_bit_for_bit(stream, elements):
    import cupy

    from launchlab.chapters.fusion import copy_kernel
    from launchlab.gpu import build
    from launchlab.gpu.capture import GraphReplay

    built = build.load_module(copy_kernel.FAMILY, copy_kernel.DEFINES)
    x = np.random.default_rng(FRESH_SEED).standard_normal(elements).astype(np.float32)
    target = copy_kernel.make(built, cupy.empty(elements, dtype=cupy.float32))
    for how in (target, GraphReplay(target, stream)):
        assert np.array_equal(how.compute(x).view(np.uint32), x.view(np.uint32)), (elements, FRESH_SEED)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_copy_kernel_copies_a_view_off_a_16_byte_boundary(offset):
    import cupy

    from launchlab.chapters.fusion import copy_kernel
    from launchlab.gpu import build

    built = build.load_module(copy_kernel.FAMILY, copy_kernel.DEFINES)
    view = cupy.empty(5000, dtype=cupy.float32)[offset:offset + 4001]   # x starts 4 offset bytes off: the scalar path
    x = np.random.default_rng(FRESH_SEED + offset).standard_normal(view.size).astype(np.float32)
    target = copy_kernel.make(built, view)
    assert np.array_equal(target.compute(x), x), (offset, FRESH_SEED)
