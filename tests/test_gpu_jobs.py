"""GPU: Example B's six variants against the affine-composition oracle on fresh seeds, one active CTA per
SM, the graphs' nodes (a memset node for the queue reset), the queue's progress with any worker count,
poisoned outputs failing, and the traced build's traces passing their checks."""
import numpy as np
import pytest

from launchlab.model import jobs as model

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def modules():
    from launchlab.gpu import jobs

    return {"timed": jobs.load(), "traced": jobs.load(traced=True)}


@pytest.fixture(scope="module")
def sms():
    from launchlab.gpu import jobs

    return jobs.sm_count()


@pytest.fixture(scope="module")
def setups(modules, backend, sms):
    from launchlab.gpu import jobs

    built = {}
    for case in model.CASES:
        problem = jobs.JobProblem(model.a_iterations(case, model.job_count(sms)))
        built[case] = (problem, *jobs.variants(modules["timed"], problem, backend.stream))
    return built


def test_shared_reservation_is_just_over_half_the_sm(sms):
    from launchlab.gpu import jobs

    record = jobs.shared_memory()
    assert record["dynamic_shared_bytes"] == record["shared_per_sm"] // 2 + model.SHARED_MARGIN_BYTES
    assert record["dynamic_shared_bytes"] <= record["shared_per_block_optin"]
    if record["shared_per_sm"] == 228 * 1024:  # H100 and H200
        assert record["dynamic_shared_bytes"] == 116_992


def test_one_active_cta_per_sm(setups):
    from launchlab.gpu import jobs

    _, targets, _, _ = setups["ragged"]
    for schedule, target in targets.items():
        assert target.active_ctas_per_sm() == {name: 1 for name in target.KERNELS}, schedule
        for name, kernel in target.kernels.items():  # the reservation, not the code, is what limits it
            assert jobs.active_ctas_per_sm(kernel, 0) > 1, (schedule, name)


@pytest.mark.parametrize("case", model.CASES)
def test_every_variant_matches_the_oracle_on_fresh_seeds(setups, case, sms):
    problem, targets, invokes, _ = setups[case]
    assert problem.jobs == model.job_count(sms)
    for index in (0, model.HELD_OUT_FIXTURE):
        x = model.inputs(FRESH_SEED, index, problem.jobs)
        ref = problem.reference(x)
        for variant, invoke in invokes.items():
            target = targets[model.schedule_of(variant)]
            result = model.compare_exact(target.compute(x, invoke), ref)
            assert result["passed"], f"seed {FRESH_SEED}, {case}, {variant}, fixture {index}: {result}"
            if target.schedule == "queue":
                assert target.head_after() == problem.jobs + target.workers


def test_graph_nodes(setups):
    _, _, _, graphs = setups["ragged"]
    counts = {name: g["counts"] for name, g in graphs.items()}
    assert counts == {"separate_graph": {"kernel": 2, "other": 0}, "fused_graph": {"kernel": 1, "other": 0},
                      "queue_graph": {"kernel": 1, "other": 1}}
    from launchlab.model import dot

    nodes = dot.parse_dot(graphs["queue_graph"]["dot"])["nodes"]
    others = [n for n in nodes.values() if "jobs_queue" not in n["label"]]
    assert any("MEMSET" in line.upper() for line in others[0]["label"]), others  # the counter reset


def test_poisoned_outputs_and_a_skipped_reset_fail(setups):
    from launchlab.gpu.jobs import _JobTarget

    problem, targets, _, _ = setups["balanced"]
    x = model.inputs(FRESH_SEED, 5, problem.jobs)
    ref = problem.reference(x)
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
def test_queue_progress_needs_no_co_residency(modules, backend, sms, workers):
    from launchlab.gpu import jobs

    problem = jobs.JobProblem(model.a_iterations("ragged", model.job_count(sms)))
    count = 2 * sms if workers == "twice" else workers  # "twice": half the workers wait for an SM
    queue = jobs.QueueJobs(modules["timed"], problem, workers=count)
    x = model.inputs(FRESH_SEED, 6, problem.jobs)
    assert model.compare_exact(queue.compute(x), problem.reference(x))["passed"]
    assert queue.head_after() == problem.jobs + count


@pytest.mark.parametrize("case", model.CASES)
def test_traced_build_validates_and_its_traces_pass_the_checks(modules, backend, sms, case):
    from launchlab.gpu import jobs

    problem = jobs.JobProblem(model.a_iterations(case, model.job_count(sms)))
    targets, invokes, _ = jobs.variants(modules["traced"], problem, backend.stream)
    records = jobs.attach_trace(modules["traced"], problem.jobs)
    x = model.inputs(FRESH_SEED, 7, problem.jobs)
    ref = problem.reference(x)
    for variant, invoke in invokes.items():
        schedule = model.schedule_of(variant)
        assert model.compare_exact(targets[schedule].compute(x, invoke), ref)["passed"], variant
        trace = jobs.collect_trace(records, invoke)
        result = model.check_trace(trace, problem.jobs, schedule, getattr(targets[schedule], "workers", None))
        assert result["passed"], (variant, result)
        if schedule == "separate":
            assert result["early_b"] == 0
        if schedule == "queue":
            assert result["workers_used"] <= sms and result["sms_used"] <= sms
