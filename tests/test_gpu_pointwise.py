"""GPU: Example A's declared variants bit for bit against the oracle on fresh seeds at every size, the
captured graphs' kernel node counts (3 and 1), poisoned or partial outputs failing the check, and the
chapter run end to end through the runner (small sizes, into a temporary evidence root)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from launchlab.chapters.declaration import Counts
from launchlab.chapters.example_a_pointwise import CHAPTER, ROWS, Parameters, model

SIZES = (256, 32_768, 1_048_576, 16_777_216, 1000)  # 1000: a last block only partly used

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def built():
    from launchlab.chapters.example_a_pointwise import device as pointwise

    return pointwise.load()


@pytest.fixture(scope="module")
def setups(built, backend):
    """{n: {VariantId: runner}} of every declared variant, made from its row as the run makes it."""
    from launchlab.chapters.example_a_pointwise.device import Context
    from launchlab.gpu.capture import stream_and_graph

    context = Context(built)
    variants = CHAPTER.variants(Parameters(sizes=Counts(SIZES)))
    runners = stream_and_graph(variants, lambda v: v.row.make(context, v.id.case), backend.stream)
    return {n: {vid: r for vid, r in runners.items() if vid.case == f"n{n}"} for n in SIZES}


def test_build_has_contraction_off_and_no_local_memory(built):
    assert "--fmad=false" in built.options
    resources = built.resources(tuple(k for row in ROWS for k in row.kernels))
    assert all(r["local_bytes"] == 0 for r in resources.values()), resources


@pytest.mark.parametrize("n", SIZES)
def test_every_variant_is_exact_on_fresh_seeds(setups, n):
    assert len(setups[n]) == 2 * len(ROWS)
    for index in range(2):
        x = model.fixture(FRESH_SEED, index, n)
        ref = model.reference(x)
        for vid, variant in setups[n].items():
            result = model.compare_exact(variant.compute(x), ref)
            assert result["passed"], f"seed {FRESH_SEED}, {vid}, fixture {index}: {result}"


def by_name(setups, n: int, name: str):
    """The runner of `<row>.n<n>.<submission>` given as "three.stream"."""
    row, submission = name.split(".")
    return next(r for vid, r in setups[n].items() if (vid.target, vid.submission) == (row, submission))


def test_intermediates_of_the_three_kernel_path(setups):
    three = by_name(setups, 32_768, "three.stream")
    x = model.fixture(FRESH_SEED, 2, three.n)
    three.compute(x)
    a = np.add(x, np.float32(1), dtype=np.float32)
    assert np.array_equal(three.a.get().view(np.uint32), a.view(np.uint32))
    assert np.array_equal(three.b.get().view(np.uint32), np.multiply(a, a, dtype=np.float32).view(np.uint32))


@pytest.mark.parametrize("n", SIZES)
def test_graphs_hold_one_kernel_node_per_launch(setups, n):
    from launchlab.model import dot

    for row, kernels in ((row.name, row.kernels) for row in ROWS):
        graph, stream = by_name(setups, n, f"{row}.graph"), by_name(setups, n, f"{row}.stream")
        assert dot.node_counts(dot.parse_dot(graph.dot), kernels) == {"kernel": len(kernels), "other": 0}
        assert graph.target is stream and graph.submissions == 1 and stream.submissions == len(kernels)


def test_poisoned_and_partial_outputs_fail(setups):
    import cupy

    three = by_name(setups, 32_768, "three.stream")
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


def test_the_chapter_runs_through_the_runner(tmp_path):
    """execute() in a child process (the evidence root is read at import) on two small sizes, ncu at one."""
    from launchlab.analysis import open_run

    code = ("from launchlab.chapters import chapter; from launchlab.runner import execute; "
            "c = chapter('example_a_pointwise'); "
            "print(execute(c, '20990101T000000Z-exa-test', c.parse_parameters({'sizes': '256,1000', 'profile_size': 1000})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "LAUNCHLAB_EVIDENCE_ROOT": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    run = open_run(tmp_path / "runs/20990101T000000Z-exa-test", require_sealed=False)
    assert run.record.verdict == "passed" and run.headline["exact_checks"] == 32
    assert run.headline["kernel_nodes.three"] == 3 and run.headline["kernel_nodes.fused"] == 1
    assert {f"event_us.{row}_{sub}.{n}" for row in (r.name for r in ROWS) for sub in ("stream", "graph") for n in (256, 1000)} \
        <= set(run.headline)
    dram = run.summaries["dram"]
    assert dram["size"] == 1000 and (dram["error"] is not None or set(dram["paths"]) == {"three", "fused"})
    assert ("dram_over_logical.three_stream.1000" in run.headline) == ("three" in dram["paths"])
    assert set(run.summaries["sanitizer"]) == {"memcheck", "racecheck"}
    assert "--fmad=false" in run.json("builds/pointwise/record.json")["options"]
