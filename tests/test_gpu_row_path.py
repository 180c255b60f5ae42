"""GPU: the four-kernel row path against the float64 oracle on fresh seeds and irregular shapes."""
import numpy as np
import pytest

from launchlab.model import oracles
from launchlab.model import workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def row_module():
    from launchlab.gpu import build
    from launchlab.gpu.backend import CupyBackend

    CupyBackend()  # a non-blocking stream made current, as in the chapters
    return build.load_module("row_softmax")


@pytest.mark.parametrize("shape", [(1823, 781), (1, 1), (3, 257), (64, 65536), (4096, 1024)])
def test_row_path_matches_oracle_on_fresh_seed(row_module, shape):
    from launchlab.gpu.targets import RowPath

    x = workloads.rms_softmax_fixture(FRESH_SEED, 0, *shape)
    y = RowPath(row_module, *shape).compute(x)
    result = oracles.compare(y, oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    assert result["passed"], f"seed {FRESH_SEED}, shape {shape}: {result}"


def test_unwritten_output_fails_validation(row_module):
    """Poisoning works: skipping the last kernel leaves NaN in y, which must fail."""
    from launchlab.gpu.targets import RowPath

    path = RowPath(row_module, 33, 300)
    x = workloads.rms_softmax_fixture(FRESH_SEED, 1, 33, 300)
    path.x.set(x)
    path.poison()
    for kernel, grid, block, args in path.launches[:3]:
        kernel(grid, block, args)
    result = oracles.compare(path.y.get(), oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    assert not result["passed"] and result["non_finite_elements"] == x.size


def test_traced_build_matches_oracle_and_records_every_block(row_module):
    from launchlab.gpu import build
    from launchlab.gpu import probes
    from launchlab.model import timelines
    from launchlab.gpu.targets import RowPath

    traced = build.load_module("row_softmax", {"LAUNCHLAB_TRACE": None})
    rows, cols = 517, 1029
    path = RowPath(traced, rows, cols)
    records = probes.attach_buffer(traced, 4, rows)
    x = workloads.rms_softmax_fixture(FRESH_SEED, 2, rows, cols)
    y = path.compute(x)
    assert oracles.compare(y, oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)["passed"]
    timeline = probes.collect(records, path.invoke, 4, rows)
    spans = timelines.kernel_spans(timeline["start_ns"], timeline["end_ns"], RowPath.KERNELS)
    assert all(s["gap_before_ns"] >= 0 for s in spans[1:]), spans  # stream order: K(n+1) after all of K(n)
