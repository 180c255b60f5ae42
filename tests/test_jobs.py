"""Example B on the CPU: the job table, the affine-composition oracle against hand-checked values and
against direct iteration, the trace checks on synthetic traces, the schedule model, and the kernels'
build for sm_90 (timed and traced) without local memory."""
import json
import shutil

import numpy as np
import pytest

from launchlab.gpu import build
from launchlab.chapters.example_b_jobs import model

ARCH = "sm_90"  # the H200 of the book's runs

# Stage A's map from 0, step by step: 1664525 * v + 1013904223 mod 2**32 (v1 = 1013904223;
# v2 = 1664525 * 1013904223 + 1013904223 = 1,687,669,940,693,298 = 1,196,435,762 mod 2**32; ...).
STAGE_A_FROM_ZERO = [1013904223, 1196435762, 3519870697, 2868466484, 1649599747, 2670642822]


def test_job_count_and_tables():
    assert model.job_count(132) == 597
    assert model.job_count(1) == 7 and model.job_count(2) == 12
    with pytest.raises(ValueError):
        model.job_count(0)
    ragged = model.a_iterations("ragged", 597)
    assert ragged.dtype == np.int32 and ragged.shape == (597,)
    assert ragged[0] == ragged[8] == ragged[592] == 8192 and ragged[1] == ragged[7] == ragged[596] == 256
    assert (ragged == 8192).sum() == 75
    assert set(model.a_iterations("balanced", 597).tolist()) == {1024}
    with pytest.raises(ValueError):
        model.a_iterations("skewed", 5)


def test_shared_reservation_leaves_room_for_one_cta():
    per_sm = 228 * 1024
    reserved = model.reserved_shared_bytes(per_sm)
    assert reserved == 116_992  # the historical run's figure, derived from the per-SM size
    system_per_cta = 1024       # what sm_90 keeps per CTA besides the launch's own shared memory
    assert reserved + system_per_cta <= per_sm < 2 * (reserved + system_per_cta)
    assert reserved <= 227 * 1024  # within the opt-in per-block limit


def test_every_declared_row_is_a_schedule_the_model_knows():
    from launchlab.chapters.example_b_jobs import ROWS

    assert [row.name for row in ROWS] == list(model.SCHEDULES) and set(model.KERNELS) == set(model.SCHEDULES)


# ------------------------------------------------------------------------------------- affine maps
def test_stage_a_from_zero_by_hand_by_iteration_and_by_composition():
    v = np.zeros(1, np.uint32)
    for k, expected in enumerate(STAGE_A_FROM_ZERO, start=1):
        assert int(model.iterate(model.LCG_A, v, k)[0]) == expected
        assert int(model.apply(model.power(model.LCG_A, k), v)[0]) == expected
    assert model.compose(model.LCG_A, model.LCG_A) == ((1664525 ** 2) % 2 ** 32, (1664525 * 1013904223 + 1013904223) % 2 ** 32)


def test_stage_b_by_hand():
    # 22695477 * 0 + 1 = 1; 22695477 * 1 + 1 = 22695478;
    # 22695477 * 22695478 + 1 = 515,084,698,953,007 = 119,927 * 2**32 + 2,156,045,615
    assert 119_927 * 2 ** 32 + 2_156_045_615 == 22695477 * 22695478 + 1
    assert [int(model.iterate(model.LCG_B, np.zeros(1, np.uint32), k)[0]) for k in (1, 2, 3)] == \
        [1, 22695478, 2_156_045_615]
    assert int(model.apply(model.power(model.LCG_B, 3), np.zeros(1, np.uint32))[0]) == 2_156_045_615


def test_power_identities():
    assert model.power(model.LCG_A, 0) == (1, 0)
    assert model.power(model.LCG_A, 1) == model.LCG_A
    # Both maps have full period 2**32 (odd increment, multiplier 1 mod 4): the 2**32-th power is the identity
    assert model.power(model.LCG_A, 2 ** 32) == model.power(model.LCG_B, 2 ** 32) == (1, 0)
    assert model.power(model.LCG_A, 2 ** 31) != (1, 0)
    for k in (2, 3, 7, 100, 513):
        stepped = (1, 0)
        for _ in range(k):
            stepped = model.compose(model.LCG_A, stepped)
        assert model.power(model.LCG_A, k) == stepped
    with pytest.raises(ValueError):
        model.power(model.LCG_A, -1)


def test_apply_wraps_modulo_two_to_the_32():
    values = np.array([0, 1, 2 ** 31, 2 ** 32 - 1], np.uint32)
    expected = [(1664525 * int(v) + 1013904223) % 2 ** 32 for v in values]
    assert model.apply(model.LCG_A, values).tolist() == expected


@pytest.mark.parametrize("case", model.CASES)
def test_oracle_matches_direct_iteration_with_the_real_counts(case):
    jobs = model.job_count(1)  # 7 jobs: 0 is heavy in the ragged case
    x = model.inputs(3, 0, jobs)
    a_iters = model.a_iterations(case, jobs)
    assert np.array_equal(model.oracle(x, a_iters), model.direct(x, a_iters))


def test_oracle_matches_direct_iteration_on_random_counts():
    generator = np.random.default_rng(9)
    x = model.inputs(4, 1, 5)
    a_iters = generator.integers(0, 300, size=5).astype(np.int32)
    assert np.array_equal(model.oracle(x, a_iters, 37), model.direct(x, a_iters, 37))


def test_stage_b_reads_the_mirrored_thread():
    x = np.zeros((1, 256), np.uint32)
    x[0, 0] = 1
    y = model.oracle(x, np.array([0], np.int32), 0)  # no work: y is x mirrored
    assert y[0, 255] == 1 and y[0, :255].sum() == 0
    base = model.oracle(np.zeros((1, 256), np.uint32), np.array([3], np.int32))
    moved = model.oracle(x, np.array([3], np.int32))
    assert np.flatnonzero(base != moved).tolist() == [255]


def test_oracle_refuses_bad_problems():
    with pytest.raises(ValueError):
        model.oracle(np.zeros((2, 255), np.uint32), np.zeros(2, np.int32))
    with pytest.raises(ValueError):
        model.oracle(np.zeros((2, 256), np.int64), np.zeros(2, np.int32))
    with pytest.raises(ValueError):
        model.oracle(np.zeros((2, 256), np.uint32), np.zeros(3, np.int32))


def test_inputs_are_deterministic_and_change_with_the_seed():
    x = model.inputs(7, 0, 12)
    assert x.dtype == np.uint32 and x.shape == (12, 256)
    assert np.array_equal(x, model.inputs(7, 0, 12))
    assert not np.array_equal(x, model.inputs(7, model.HELD_OUT_FIXTURE, 12))
    assert not np.array_equal(x, model.inputs(8, 0, 12))


def test_compare_exact():
    ref = model.oracle(model.inputs(1, 0, 3), model.a_iterations("ragged", 3))
    assert model.compare_exact(ref.copy(), ref)["passed"]
    poisoned = np.full_like(ref, 0xFFFFFFFF)
    result = model.compare_exact(poisoned, ref)
    assert not result["passed"] and result["jobs_with_mismatches"] == 3
    json.dumps(result)
    off = ref.copy()
    off[2, 9] ^= 1
    assert model.compare_exact(off, ref)["first_mismatch"] == [2, 9]


# ------------------------------------------------------------------------------------- traces
def synthetic(schedule: str, case: str = "ragged", sm_count: int = 4) -> tuple[dict, int, int]:
    jobs = model.job_count(sm_count)
    a_ns = model.a_iterations(case, jobs) * 4.0
    trace = model.simulate(schedule, a_ns, np.full(jobs, model.B_ITERATIONS * 4.0), sm_count, gap_ns=1000.0)
    return {k: np.asarray(v).astype(np.int64) if k != "written" else v for k, v in trace.items()}, jobs, sm_count


def test_early_b_by_hand():
    trace = {"a_end_ns": np.array([10, 20, 30]), "b_start_ns": np.array([15, 25, 30]), "job": np.array([0, 1, 2])}
    # job 0: B at 15 < 30 (job 2's A end); job 1: 25 < 30; job 2: its own A ends last, the latest other is 20
    assert model.early_b(trace) == 2
    trace["b_start_ns"] = np.array([30, 30, 31])
    assert model.early_b(trace) == 0  # starting at the same ns as the last A end is not early


@pytest.mark.parametrize("schedule", model.SCHEDULES)
@pytest.mark.parametrize("case", model.CASES)
def test_modelled_traces_pass_their_checks(schedule, case):
    trace, jobs, workers = synthetic(schedule, case)
    result = model.check_trace(trace, jobs, schedule, workers)
    assert result["passed"], result
    if schedule == "separate":
        assert result["early_b"] == 0
    else:
        assert result["early_b"] > 0
    assert result["sms_used"] == workers


def test_fused_and_queue_models_agree():
    fused, _, _ = synthetic("fused")
    queue, _, _ = synthetic("queue")
    for field in model.TIME_FIELDS:
        assert np.array_equal(fused[field], queue[field])


def broken(schedule: str, edit) -> dict:
    trace, jobs, workers = synthetic(schedule)
    edit(trace)
    return model.check_trace(trace, jobs, schedule, workers)


def test_a_duplicated_job_fails():
    result = broken("queue", lambda t: t["job"].__setitem__(3, 4))
    assert not result["passed"] and not result["checks"]["every_job_once"]


def test_b_before_its_own_a_fails():
    def edit(t):
        t["b_start_ns"][5] = t["a_end_ns"][5] - 1
    result = broken("fused", edit)
    assert not result["passed"] and not result["checks"]["a_precedes_b"]


def test_separate_with_an_early_b_fails():
    def edit(t):
        t["b_start_ns"][0] = t["a_end_ns"].max() - 1
    result = broken("separate", edit)
    assert not result["passed"] and not result["checks"]["no_b_before_all_a"]
    assert result["checks"]["a_precedes_b"] and result["early_b"] == 1


def test_stages_on_two_sms_fail_in_one_cta_schedules():
    result = broken("fused", lambda t: t["sm_b"].__setitem__(2, t["sm_a"][2] + 1))
    assert not result["checks"]["a_and_b_on_one_sm"]


def test_queue_worker_out_of_range_fails():
    result = broken("queue", lambda t: t["worker"].__setitem__(0, 4))
    assert not result["checks"]["workers_in_range"]


def test_raw_records_and_an_unwritten_one():
    jobs = 3
    table = np.zeros((jobs, model.JOB_WORDS), np.uint64)
    for job in range(jobs):  # {A start, A end, B start, B end, job, worker, SM A, SM B}
        t0 = 1_000_000 + 100 * job
        table[job] = [t0, t0 + 40, t0 + 41, t0 + 90, job, job, 7 + job, 7 + job]
    arrays = model.trace_arrays(table.ravel())
    assert arrays["a_start_ns"].tolist() == [0, 100, 200] and arrays["b_end_ns"].tolist() == [90, 190, 290]
    assert arrays["sm_a"].tolist() == [7, 8, 9] and arrays["written"].all()
    assert model.check_trace(arrays, jobs, "fused")["passed"]
    table[1, 3] = 0  # B of job 1 never wrote its end
    result = model.check_trace(model.trace_arrays(table), jobs, "fused")
    assert not result["passed"] and not result["checks"]["every_record_written"] and "early_b" not in result
    assert not model.check_trace(arrays, jobs + 1, "fused")["passed"]  # a missing job


# ------------------------------------------------------------------------------------- the kernels' build
@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("defines", [None, {"LAUNCHLAB_TRACE": None}], ids=["timed", "traced"])
def test_jobs_kernels_build_for_sm90_without_local_memory(defines):
    report = build.nvcc_report("jobs", defines, arch=ARCH)
    assert set(report["resources"]) == {"jobs_stage_a", "jobs_stage_b", "jobs_fused", "jobs_queue"}, report["ptxas_log"]
    for kernel, resources in report["resources"].items():
        assert resources["spill_stores"] == resources["spill_loads"] == 0, (kernel, resources)
        assert resources["stack_bytes"] == resources["local_bytes"] == 0, (kernel, resources)
        assert resources["registers"] <= 64, (kernel, resources)
    assert report["resources"]["jobs_queue"]["shared_bytes"] == 4  # the job number handed from thread 0
    ptx = report["ptx"]
    assert f".target {ARCH}" in ptx
    assert "st.volatile.global.u32" in ptx and "ld.volatile.global.u32" in ptx  # A passes through global memory
    # the stage loops stay one multiply-add per step (no folding of unrolled steps into one)
    assert ptx.count("mad.lo.s32") == 6  # stage A and stage B in stage_a/stage_b, fused and queue
    assert "1664525, 1013904223" in ptx and "22695477, 1;" in ptx
