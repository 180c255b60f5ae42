"""GPU: Example A's four variants bit for bit against the oracle on fresh seeds at every size, the
captured graphs' kernel node counts (3 and 1), and poisoned or partial outputs failing the check."""
import numpy as np
import pytest

from launchlab.model import pointwise as model

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def built():
    from launchlab.gpu import pointwise

    return pointwise.load()


@pytest.fixture(scope="module")
def setups(built, backend):
    from launchlab.gpu import pointwise

    return {n: pointwise.variants(built, n, backend.stream) for n in model.SIZES + (1000,)}


def test_build_has_contraction_off_and_no_local_memory(built):
    from launchlab.gpu import pointwise

    assert "--fmad=false" in built.options
    resources = built.resources(pointwise.THREE_KERNELS + pointwise.FUSED_KERNELS)
    assert all(r["local_bytes"] == 0 for r in resources.values()), resources


@pytest.mark.parametrize("n", model.SIZES + (1000,))  # 1000: a last block only partly used
def test_every_variant_is_exact_on_fresh_seeds(setups, n):
    targets, invokes, _ = setups[n]
    for index in range(2):
        x = model.fixture(FRESH_SEED, index, n)
        ref = model.reference(x)
        for variant, invoke in invokes.items():
            result = model.compare_exact(targets[model.path_of(variant)].compute(x, invoke), ref)
            assert result["passed"], f"seed {FRESH_SEED}, n {n}, {variant}, fixture {index}: {result}"


def test_intermediates_of_the_three_kernel_path(setups):
    targets, _, _ = setups[32_768]
    three = targets["three"]
    x = model.fixture(FRESH_SEED, 2, three.n)
    three.compute(x)
    a = np.add(x, np.float32(1), dtype=np.float32)
    assert np.array_equal(three.a.get().view(np.uint32), a.view(np.uint32))
    assert np.array_equal(three.b.get().view(np.uint32), np.multiply(a, a, dtype=np.float32).view(np.uint32))


@pytest.mark.parametrize("n", model.SIZES)
def test_graphs_hold_three_and_one_kernel_nodes(setups, n):
    _, _, graphs = setups[n]
    assert graphs["three_graph"]["counts"] == {"kernel": 3, "other": 0}
    assert graphs["fused_graph"]["counts"] == {"kernel": 1, "other": 0}
    assert {name: g["stream_launches"] for name, g in graphs.items()} == {"three_graph": 3, "fused_graph": 1}


def test_poisoned_and_partial_outputs_fail(setups):
    import cupy

    targets, _, _ = setups[32_768]
    three = targets["three"]
    x = model.fixture(FRESH_SEED, model.HELD_OUT_FIXTURE, three.n)
    ref = model.reference(x)
    assert not model.compare_exact(three.compute(x, invoke=lambda: None), ref)["passed"]  # nothing ran

    def first_two():  # y never written: the poison stays
        for kernel, grid, block, args in three.launches[:2]:
            kernel(grid, block, args)

    result = model.compare_exact(three.compute(x, invoke=first_two), ref)
    assert not result["passed"] and result["non_finite"] == three.n
    three.compute(x)
    three.y[-1] = cupy.float32(np.nan)  # one element lost
    assert model.compare_exact(three.y.get(), ref)["mismatches"] == 1
