"""GPU: the tiled path and captured graphs against the oracle, with new inputs in the captured buffers."""
import numpy as np
import pytest

from launchlab.model import oracles
from launchlab.model import workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend
    return CupyBackend()


@pytest.fixture(scope="module")
def modules():
    from launchlab.gpu import build
    return {family: build.load_module(family) for family in ("row_softmax", "tiled_softmax")}


@pytest.mark.parametrize("lengths", [[1, 1023, 1025, 5000, 3, 2048], list(workloads.tiled_row_lengths("ragged")[:16])])
def test_tiled_path_matches_oracle(modules, backend, lengths):
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled_softmax"], lengths)
    x = workloads.packed_fixture(FRESH_SEED, 0, lengths)
    result = oracles.compare(path.compute(x), oracles.rms_softmax_packed(x, path.row_offsets),
                             oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}: {result}"


def test_replayed_graphs_follow_new_inputs(modules, backend):
    """Pointers are fixed at capture: new inputs written into the captured buffers give new, correct outputs."""
    from launchlab.gpu import capture
    from launchlab.model import dot
    from launchlab.gpu.targets import RowPath
    from launchlab.gpu.targets import TiledPath

    row = RowPath(modules["row_softmax"], 1823, 781)
    tiled = TiledPath(modules["tiled_softmax"], [700, 3000, 1])
    for path, kernels in ((row, 4), (tiled, 3)):
        graph, setup = capture.capture(path.invoke, backend.stream)
        parsed = dot.parse_dot(graph.debug_dot_str())
        assert dot.node_counts(parsed, path.KERNELS) == {"kernel": kernels, "other": 0}
        assert len(path.launches) == kernels
        assert setup["first_replay_us"] > 0
        for index in range(3):
            if path is row:
                x = workloads.rms_softmax_fixture(FRESH_SEED, index, 1823, 781)
                ref, offsets = oracles.rms_softmax(x), None
            else:
                x = workloads.packed_fixture(FRESH_SEED, index, path.lengths)
                ref, offsets = oracles.rms_softmax_packed(x, path.row_offsets), path.row_offsets
            y = path.compute(x, lambda: graph.launch(backend.stream))
            result = oracles.compare(y, ref, oracles.RMS_SOFTMAX_TOLERANCE, offsets)
            assert result["passed"], f"seed {FRESH_SEED}, fixture {index}: {result}"
