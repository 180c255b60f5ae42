"""GPU: the fused row kernel (both modes, every tier), the copy, the cold-L2 helpers and the
library baselines against the float64 oracles, on irregular shapes and fresh seeds."""
import numpy as np
import pytest

from launchlab.model import oracles
from launchlab.model import workloads
from launchlab.chapters import fusion

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
    """The fused kernel compiled as the chapter compiles it: the policy's defines, or for a
    forced block size the register tier's unrolling and register budget."""
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
@pytest.mark.parametrize("shape", [(1823, 781), (1, 1), (3, 257), (33, 130), (64, 4096), (7, 6001), (5, 20001), (3, 70001)])
def test_fused_policy_matches_oracle_on_fresh_seed(stream, shape, mode):
    config = fusion.fused_config(*shape, shared_limit())
    check_fused(*shape, mode, config["block"], config["shared_bytes"], expected_tier=config["tier"],
                defines=config["defines"])


@pytest.mark.parametrize("mode", ["rms", "plain"])
@pytest.mark.parametrize("rows, cols, block, tier", [
    (7, 1023, 256, "registers"), (9, 509, 32, "registers"),
    (5, 20001, 256, "shared"), (6, 4099, 64, "shared"),
    (3, 70001, 1024, "streamed"), (4, 5003, 32, "streamed"), (2, 16384, 128, "streamed"),
])
def test_every_tier_matches_oracle(stream, rows, cols, block, tier, mode):
    """Each place a row can live, forced by the block size and the shared memory given;
    cols % 4 != 0 puts rows at every alignment, so edge chunks are read lane by lane."""
    shared = 16 * fusion.max_chunks(rows, cols) if tier == "shared" else 0
    check_fused(rows, cols, mode, block, shared, seed_index=1, expected_tier=tier)


def test_a_row_longer_than_fits_on_chip_is_streamed(stream):
    config = fusion.fused_config(3, 70001, shared_limit())
    assert config["tier"] == "streamed" and 16 * fusion.max_chunks(3, 70001) > shared_limit()
    check_fused(3, 70001, "rms", config["block"], config["shared_bytes"], seed_index=2, defines=config["defines"])


def test_unwritten_output_fails_and_misaligned_buffers_are_refused(stream):
    import cupy

    from launchlab.gpu.targets import FusedRow

    path = FusedRow(fused_module(64), 33, 300)
    x = workloads.rms_softmax_fixture(FRESH_SEED, 3, 33, 300)
    path.x.set(x)
    path.poison()  # never launched: every element stays NaN
    result = oracles.compare(path.y.get(), oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    assert not result["passed"] and result["non_finite_elements"] == x.size
    base = cupy.empty(33 * 300 + 1, dtype=cupy.float32)
    with pytest.raises(ValueError, match="16-byte boundaries"):
        FusedRow(fused_module(64), 33, 300, x=base[1:].reshape(33, 300))


def test_graph_replay_matches_oracle(stream):
    from launchlab.gpu import capture
    from launchlab.model import dot
    from launchlab.gpu.targets import FusedRow

    path = FusedRow(fused_module(64), 517, 1029, "plain")
    graph, setup = capture.capture(path.invoke, stream)
    assert setup["first_replay_us"] > 0
    x = workloads.rms_softmax_fixture(FRESH_SEED, 4, 517, 1029)
    y = path.compute(x, lambda: graph.launch(stream))
    assert oracles.compare(y, oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)["passed"]


def test_copy_and_cold_helpers(backend, stream):
    import cupy

    from launchlab.gpu.instruments import ColdL2, time_cold
    from launchlab.gpu.targets import DeviceCopy

    x = cupy.asarray(workloads.rms_softmax_fixture(FRESH_SEED, 5, 257, 1031))
    copy = DeviceCopy(x)
    copy.poison()
    copy.invoke()
    stream.synchronize()
    assert bool((copy.y == x).all())
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    cold = ColdL2(fused_module(64), int(properties["l2CacheSize"]), int(properties["multiProcessorCount"]), 50_000)
    event_ms, enqueue_ns = time_cold(copy.invoke, backend, cold)
    assert 0 < event_ms < 50 and enqueue_ns > 0


@pytest.mark.parametrize("name", fusion.LIBRARIES)
@pytest.mark.parametrize("shape", [(1823, 781), (3, 70001)])
def test_library_baseline_matches_plain_oracle(stream, name, shape):
    import cupy

    from launchlab.gpu import baselines

    x = workloads.rms_softmax_fixture(FRESH_SEED, 6, *shape)
    x_dev = cupy.asarray(x)
    baseline, note = baselines.make_baseline(name, x_dev, stream)
    if baseline is None:
        pytest.skip(f"{name} is not available here: {note}")
    baseline.y.fill(np.nan)
    baseline.invoke()
    stream.synchronize()
    result = oracles.compare(baseline.y.get(), oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)
    assert result["passed"], f"seed {FRESH_SEED}, {name} {shape}: {result}"
