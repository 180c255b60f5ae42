"""GPU: Example B's declared variants against the affine-composition oracle on fresh seeds, one active CTA per
SM, the graphs' nodes (a memset node for the queue reset), the queue's progress with any worker count,
poisoned outputs failing, the traced build's traces passing their checks, and the chapter run end to end
through the runner (the ragged case, into a temporary evidence root)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from launchlab.chapters.declaration import Names
from launchlab.chapters.example_b_jobs import CHAPTER, Parameters, model

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def modules():
    from launchlab.chapters.example_b_jobs import device as jobs

    return {"timed": jobs.load(), "traced": jobs.load(traced=True)}


@pytest.fixture(scope="module")
def layout():
    from launchlab.chapters.example_b_jobs import device as jobs

    return jobs.device_layout()


@pytest.fixture(scope="module")
def sms(layout):
    return layout["sm_count"]


def reference(problem, x):
    return model.oracle(x, problem.a_iters_host, problem.b_iters)


def case_variants(built, case: str, stream, layout) -> tuple:
    """(problem, {"<row>_<submission>": Target or GraphReplay}) of one case, made from the declared rows."""
    from launchlab.chapters.example_b_jobs import device as jobs
    from launchlab.gpu.capture import stream_and_graph

    context = jobs.Context(built, layout)
    declared = CHAPTER.variants(Parameters(cases=Names((case,))))
    runners = stream_and_graph(declared, lambda v: v.row.make(context, v.id.case), stream)
    return context.problem(case), {f"{vid.target}_{vid.submission}": r for vid, r in runners.items()}


@pytest.fixture(scope="module")
def setups(modules, backend, layout):
    """{case: (problem, {variant name: Target or GraphReplay})} on the timed build."""
    return {case: case_variants(modules["timed"], case, backend.stream, layout) for case in model.CASES}


def test_shared_reservation_is_just_over_half_the_sm(layout):
    record = layout["shared_memory"]
    assert record["dynamic_shared_bytes"] == record["shared_per_sm"] // 2 + model.SHARED_MARGIN_BYTES
    assert record["dynamic_shared_bytes"] <= record["shared_per_block_optin"]
    if record["shared_per_sm"] == 228 * 1024:  # H100 and H200
        assert record["dynamic_shared_bytes"] == 116_992


def test_one_active_cta_per_sm(setups):
    from launchlab.chapters.example_b_jobs import device as jobs

    _, variants = setups["ragged"]
    for name in ("separate_stream", "fused_stream", "queue_stream"):
        target = variants[name]
        assert target.active_ctas_per_sm() == {kernel: 1 for kernel in target.KERNELS}, name
        for kernel_name, kernel in target.kernels.items():  # the reservation, not the code, is what limits it
            assert jobs.active_ctas_per_sm(kernel, 0) > 1, (name, kernel_name)


@pytest.mark.parametrize("case", model.CASES)
def test_every_variant_matches_the_oracle_on_fresh_seeds(setups, case, sms):
    from launchlab.chapters.example_b_jobs import device as jobs

    problem, variants = setups[case]
    assert problem.jobs == model.job_count(sms) and len(variants) == 2 * len(model.SCHEDULES)
    for index in (0, model.HELD_OUT_FIXTURE):
        x = model.inputs(FRESH_SEED, index, problem.jobs)
        ref = reference(problem, x)
        for name, variant in variants.items():
            result = model.compare_exact(variant.compute(x), ref)
            assert result["passed"], f"seed {FRESH_SEED}, {case}, {name}, fixture {index}: {result}"
            target = jobs.underlying(variant)
            if target.schedule == "queue":
                assert target.head_after() == problem.jobs + target.workers


def test_graph_nodes(setups):
    from launchlab.model import dot

    _, variants = setups["ragged"]
    counts = {}
    for name in ("separate_graph", "fused_graph", "queue_graph"):
        graph = variants[name]
        counts[name] = dot.node_counts(dot.parse_dot(graph.dot), graph.target.KERNELS)
    assert counts == {"separate_graph": {"kernel": 2, "other": 0}, "fused_graph": {"kernel": 1, "other": 0},
                      "queue_graph": {"kernel": 1, "other": 1}}
    nodes = dot.parse_dot(variants["queue_graph"].dot)["nodes"]
    others = [n for n in nodes.values() if "jobs_queue" not in n["label"]]
    assert any("MEMSET" in line.upper() for line in others[0]["label"]), others  # the counter reset
    assert variants["queue_stream"].submissions == 2 and variants["queue_graph"].submissions == 1


def test_poisoned_outputs_and_a_skipped_reset_fail(setups):
    from launchlab.chapters.example_b_jobs.device import _JobTarget

    problem, variants = setups["balanced"]
    x = model.inputs(FRESH_SEED, 5, problem.jobs)
    ref = reference(problem, x)
    targets = {name.split("_")[0]: variants[name] for name in ("separate_stream", "fused_stream", "queue_stream")}
    for target in targets.values():
        assert not model.compare_exact(target.compute(x, invoke=lambda: None), ref)["passed"]
    queue = targets["queue"]
    # without the memset the poisoned counter says the queue is exhausted: no job runs
    result = model.compare_exact(queue.compute(x, invoke=lambda: _JobTarget.invoke(queue)), ref)
    assert not result["passed"] and result["jobs_with_mismatches"] == problem.jobs
    separate = targets["separate"]
    stage_a, grid, block, args = separate.launches[0]
    result = model.compare_exact(separate.compute(x, invoke=lambda: stage_a(grid, block, args,
                                                                            shared_mem=separate.shared_bytes)), ref)
    assert not result["passed"] and result["jobs_with_mismatches"] == problem.jobs  # stage A alone


@pytest.mark.parametrize("workers", [1, 3, "twice"])
def test_queue_progress_needs_no_co_residency(modules, backend, sms, layout, workers):
    from launchlab.chapters.example_b_jobs import device as jobs

    problem = jobs.JobProblem(model.a_iterations("ragged", model.job_count(sms)))
    count = 2 * sms if workers == "twice" else workers  # "twice": half the workers wait for an SM
    queue = jobs.QueueJobs(modules["timed"], problem, layout["shared_memory"]["dynamic_shared_bytes"], count)
    x = model.inputs(FRESH_SEED, 6, problem.jobs)
    assert model.compare_exact(queue.compute(x), reference(problem, x))["passed"]
    assert queue.head_after() == problem.jobs + count


@pytest.mark.parametrize("case", model.CASES)
def test_traced_build_validates_and_its_traces_pass_the_checks(modules, backend, sms, layout, case):
    from launchlab.chapters.example_b_jobs import device as jobs

    records = jobs.attach_trace(modules["traced"], layout["jobs"])  # before the captures replay traced kernels
    problem, variants = case_variants(modules["traced"], case, backend.stream, layout)
    x = model.inputs(FRESH_SEED, 7, problem.jobs)
    ref = reference(problem, x)
    for name, variant in variants.items():
        target = jobs.underlying(variant)
        assert model.compare_exact(variant.compute(x), ref)["passed"], name
        trace = jobs.collect_trace(records, variant.invoke)
        result = model.check_trace(trace, problem.jobs, target.schedule, getattr(target, "workers", None))
        assert result["passed"], (name, result)
        if target.schedule == "separate":
            assert result["early_b"] == 0
        if target.schedule == "queue":
            assert result["workers_used"] <= sms and result["sms_used"] <= sms


def test_the_chapter_runs_through_the_runner(tmp_path, sms):
    """execute() in a child process (the evidence root is read at import), ragged case only."""
    from launchlab.analysis import open_run

    code = ("from launchlab.chapters import chapter; from launchlab.runner import execute; "
            "c = chapter('example_b_jobs'); "
            "print(execute(c, '20990101T000000Z-exb-test', c.parse_parameters({'cases': 'ragged'})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "LAUNCHLAB_EVIDENCE_ROOT": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    run = open_run(tmp_path / "runs/20990101T000000Z-exb-test", require_sealed=False)
    headline = run.headline
    assert run.record.verdict == "passed" and headline["jobs"] == model.job_count(sms)
    assert headline["active_ctas_per_sm"] == 1 and headline["trace_checks"] == 6 and headline["exact_checks"] == 30
    assert headline["early_b.separate_graph.ragged"] == 0 and headline["early_b.fused_graph.ragged"] > 0
    assert run.summaries["graphs"]["queue.ragged.graph"] == {"kernel": 1, "other": 1, "memset": 1}
    assert set(run.summaries["sanitizer"]) == {"memcheck", "racecheck"}
