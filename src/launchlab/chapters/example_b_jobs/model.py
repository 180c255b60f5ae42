"""Example B on the CPU: the job table, the affine-composition oracle, trace checks and a schedule model.

A job owns 256 uint32 values (kernels/jobs.cu). Stage A applies f_A(v) = 1664525 v + 1013904223
(mod 2**32) a_iters[job] times to each value; stage B, after a block barrier, takes the value of the
mirrored thread (t reads 255 - t) and applies f_B(v) = 22695477 v + 1 (mod 2**32) 512 times. There
are 4 S + floor(S / 2) + 3 jobs for S SMs (597 on 132). In the ragged case every eighth job (job 0
included) runs stage A 8,192 times and the others 256 times; the balanced control runs 1,024 for all.

The oracle never iterates: an affine map v -> m v + c (mod 2**32) applied k times is again affine,
and its coefficients come from repeated squaring of the map (O(log k) compositions in Python
integers). `direct` iterates step by step; tests hold the two against each other.

A trace has one record per slot (block index, or queue position): A start and end, B start and end
(ns), job, worker, SM of A and SM of B (TRACE_FIELDS). `check_trace` holds a trace to the rules of
its schedule; `early_b` counts B stages that start before some other job's A stage ends. `simulate`
replays the three schedules with given stage durations, as a reference for what traces should show.

NumPy only: this module runs on CPU test machines and in the analysis of saved runs.
"""
from __future__ import annotations

import heapq

import numpy as np

VALUES_PER_JOB = 256
MASK = 0xFFFFFFFF
LCG_A = (1664525, 1013904223)   # (multiplier, increment) of stage A
LCG_B = (22695477, 1)           # of stage B
B_ITERATIONS = 512
A_ITERATIONS = {"light": 256, "heavy": 8192, "balanced": 1024}
HEAVY_EVERY = 8                 # ragged: jobs 0, 8, 16, ... are heavy
CASES = ("balanced", "ragged")
SCHEDULES = ("separate", "fused", "queue")
KERNELS = {"separate": ("jobs_stage_a", "jobs_stage_b"), "fused": ("jobs_fused",), "queue": ("jobs_queue",)}
SHARED_MARGIN_BYTES = 256       # reserved shared memory per CTA = per-SM shared memory / 2 + this
FIXTURES_BEFORE_TIMING = 3
HELD_OUT_FIXTURE = 3            # checked after timing, with the changed seed of `inputs`


def job_count(sm_count: int) -> int:
    """4 S + floor(S / 2) + 3: more than four full waves of one job per SM, and a ragged last one."""
    if sm_count < 1:
        raise ValueError(f"the SM count must be positive, got {sm_count}")
    return 4 * sm_count + sm_count // 2 + 3


def a_iterations(case: str, jobs: int) -> np.ndarray:
    """Stage A's iteration count per job (int32, the table the kernels read)."""
    if case == "balanced":
        return np.full(jobs, A_ITERATIONS["balanced"], dtype=np.int32)
    if case == "ragged":
        heavy = np.arange(jobs) % HEAVY_EVERY == 0
        return np.where(heavy, A_ITERATIONS["heavy"], A_ITERATIONS["light"]).astype(np.int32)
    raise ValueError(f"unknown case {case!r}; expected one of {CASES}")


def reserved_shared_bytes(shared_per_sm: int) -> int:
    """Dynamic shared memory per CTA: just over half the SM's, so a second CTA never fits beside it."""
    return int(shared_per_sm) // 2 + SHARED_MARGIN_BYTES


# --------------------------------------------------------------------------- affine maps mod 2**32
def compose(outer: tuple[int, int], inner: tuple[int, int]) -> tuple[int, int]:
    """The map v -> outer(inner(v)): m_o (m_i v + c_i) + c_o = (m_o m_i) v + (m_o c_i + c_o)."""
    (m_o, c_o), (m_i, c_i) = outer, inner
    return (m_o * m_i) & MASK, (m_o * c_i + c_o) & MASK


def power(step: tuple[int, int], k: int) -> tuple[int, int]:
    """`step` applied k times, as one affine map, by repeated squaring."""
    if k < 0:
        raise ValueError(f"an iteration count cannot be negative, got {k}")
    result, square = (1, 0), (step[0] & MASK, step[1] & MASK)
    while k:
        if k & 1:
            result = compose(square, result)  # powers of one map commute: the order is immaterial
        square = compose(square, square)
        k >>= 1
    return result


def apply(affine: tuple[int, int], values: np.ndarray) -> np.ndarray:
    """m v + c mod 2**32 on uint32 values (in uint64, whose wrap-around keeps the low 32 bits exact)."""
    wide = np.asarray(values, dtype=np.uint32).astype(np.uint64)
    return ((wide * np.uint64(affine[0]) + np.uint64(affine[1])) & np.uint64(MASK)).astype(np.uint32)


def iterate(step: tuple[int, int], values: np.ndarray, k: int) -> np.ndarray:
    """`step` applied k times, one step at a time (the direct reference)."""
    for _ in range(int(k)):
        values = apply(step, values)
    return np.asarray(values, dtype=np.uint32)


def mirrored(values: np.ndarray) -> np.ndarray:
    """Stage B's read: thread t takes the stage A value of thread 255 - t of its job."""
    return np.asarray(values)[:, ::-1]


def oracle(x: np.ndarray, a_iters: np.ndarray, b_iters: int = B_ITERATIONS) -> np.ndarray:
    """y of every job from the composed maps (no step-by-step iteration)."""
    x, a_iters = _check_problem(x, a_iters)
    mid = np.empty_like(x)
    for k in np.unique(a_iters):
        rows = a_iters == k
        mid[rows] = apply(power(LCG_A, int(k)), x[rows])
    return apply(power(LCG_B, int(b_iters)), mirrored(mid))


def direct(x: np.ndarray, a_iters: np.ndarray, b_iters: int = B_ITERATIONS) -> np.ndarray:
    """y by iterating every step, as the kernel does (slow: for tests on small tables)."""
    x, a_iters = _check_problem(x, a_iters)
    mid = np.stack([iterate(LCG_A, row, k) for row, k in zip(x, a_iters)])
    return iterate(LCG_B, mirrored(mid), b_iters)


def _check_problem(x, a_iters) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.dtype != np.uint32 or x.ndim != 2 or x.shape[1] != VALUES_PER_JOB:
        raise ValueError(f"expected uint32 values of shape (jobs, {VALUES_PER_JOB}), got {x.dtype}{x.shape}")
    a_iters = np.asarray(a_iters)
    if a_iters.shape != (x.shape[0],) or (a_iters < 0).any():
        raise ValueError(f"expected {x.shape[0]} non-negative iteration counts, got shape {a_iters.shape}")
    return x, a_iters


def input_seed(base_seed: int, index: int, jobs: int) -> int:
    return int(np.random.SeedSequence([int(base_seed), int(index), int(jobs), 0xB]).generate_state(1)[0])


def inputs(base_seed: int, index: int, jobs: int) -> np.ndarray:
    """Uniform uint32 values, (jobs, 256), regenerated from (base seed, index, jobs)."""
    generator = np.random.default_rng(input_seed(base_seed, index, jobs))
    return generator.integers(0, 2 ** 32, size=(jobs, VALUES_PER_JOB), dtype=np.uint32)


def compare_exact(out: np.ndarray, ref: np.ndarray) -> dict:
    """Element-wise equality of uint32 results, with the first mismatch's job and thread."""
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return {"passed": False, "reason": f"got {out.dtype}{out.shape}, expected {ref.dtype}{ref.shape}"}
    differ = out != ref
    bad = np.argwhere(differ)
    return {"passed": not bad.size, "elements": int(out.size), "mismatches": int(differ.sum()),
            "jobs_with_mismatches": int(differ.any(axis=-1).sum()) if out.ndim == 2 else None,
            "first_mismatch": None if not bad.size else [int(i) for i in bad[0]]}


# --------------------------------------------------------------------------- traces
JOB_WORDS = 8  # kernels/jobs.cu: {A start, A end, B start, B end, job, worker, SM of A, SM of B}
TRACE_FIELDS = ("a_start_ns", "a_end_ns", "b_start_ns", "b_end_ns", "job", "worker", "sm_a", "sm_b")
TIME_FIELDS = TRACE_FIELDS[:4]


def trace_arrays(table: np.ndarray) -> dict:
    """Raw records (slots x JOB_WORDS uint64) -> arrays, times in ns from the earliest A start.

    `written` marks records whose four stamps are all set (the buffer starts zeroed); times of an
    unwritten record are -1, so the checks report it rather than this function refusing it."""
    table = np.asarray(table, dtype=np.uint64).reshape(-1, JOB_WORDS)
    written = (table[:, :4] != 0).all(axis=1)
    origin = table[written, 0].min() if written.any() else np.uint64(0)
    arrays = {"written": written}
    for index, name in enumerate(TRACE_FIELDS):
        column = table[:, index]
        if name in TIME_FIELDS:
            arrays[name] = np.where(written, column.astype(np.int64) - np.int64(origin), -1).astype(np.int64)
        else:
            arrays[name] = column.astype(np.int64)
    return arrays


def early_b(trace: dict) -> int:
    """B stages that start before an unrelated job's A stage ends: b_start[j] < max_{i != j} a_end[i]."""
    a_end, b_start, job = (np.asarray(trace[k], dtype=np.int64) for k in ("a_end_ns", "b_start_ns", "job"))
    if a_end.size < 2:
        return 0
    order = np.argsort(a_end, kind="stable")
    last, runner_up = order[-1], order[-2]
    latest_other = np.full(a_end.size, a_end[last])
    latest_other[job == job[last]] = a_end[runner_up]  # the last A's own job is compared with the next latest
    return int((b_start < latest_other).sum())


def check_trace(trace: dict, jobs: int, schedule: str, workers: int | None = None) -> dict:
    """The checks one trace must pass, its early-B count and span.

    every_record_written, every_job_once, a_precedes_b (within each job: A start <= A end <= B
    start <= B end); separate: no_b_before_all_a; fused and queue: a_and_b_on_one_sm (one CTA runs
    both stages); fused: worker_is_job; queue: workers_in_range (worker ids below `workers`)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    t = {k: np.asarray(v) for k, v in trace.items()}
    written = t.get("written", np.ones(t["job"].size, bool))
    checks = {"every_record_written": bool(written.all()) and t["job"].size == jobs,
              "every_job_once": sorted(t["job"].tolist()) == list(range(jobs))}
    checks["a_precedes_b"] = bool(written.all() and (t["a_start_ns"] <= t["a_end_ns"]).all()
                                  and (t["a_end_ns"] <= t["b_start_ns"]).all()
                                  and (t["b_start_ns"] <= t["b_end_ns"]).all())
    if schedule == "separate":
        checks["no_b_before_all_a"] = bool(written.all() and t["b_start_ns"].min() >= t["a_end_ns"].max())
    else:
        checks["a_and_b_on_one_sm"] = bool((t["sm_a"] == t["sm_b"]).all())
    if schedule == "fused":
        checks["worker_is_job"] = bool((t["worker"] == t["job"]).all())
    if schedule == "queue":
        checks["workers_in_range"] = workers is not None and bool(((t["worker"] >= 0) & (t["worker"] < workers)).all())
    result = {"passed": all(checks.values()), "checks": checks, "jobs": int(jobs)}
    if checks["every_record_written"]:
        result.update({"early_b": early_b(t), "span_ns": int(t["b_end_ns"].max() - t["a_start_ns"].min()),
                       "workers_used": int(np.unique(t["worker"]).size),
                       "sms_used": int(np.unique(np.concatenate([t["sm_a"], t["sm_b"]])).size)})
    return result


# --------------------------------------------------------------------------- schedule model
def _list_schedule(durations, workers: int, start: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Items in order, each on the worker free soonest (ties: lowest index): (start times, workers)."""
    free = [(float(start), w) for w in range(workers)]
    heapq.heapify(free)
    starts, owners = np.empty(len(durations)), np.empty(len(durations), np.int64)
    for i, duration in enumerate(durations):
        at, worker = heapq.heappop(free)
        starts[i], owners[i] = at, worker
        heapq.heappush(free, (at + float(duration), worker))
    return starts, owners


def simulate(schedule: str, a_ns, b_ns, workers: int, gap_ns: float = 0.0) -> dict:
    """A trace of `schedule` with the given stage durations per job, on `workers` single-CTA SMs.

    separate: A blocks fill the workers in job order; B blocks start `gap_ns` after the last A ends.
    fused: a block per job runs A then B, blocks dispatched in job order as workers free up.
    queue: each worker takes the next job number when it finishes one: the same greedy order, so the
    model gives the fused schedule's times; what differs on the GPU (dispatch against an atomic
    fetch, a memset before the kernel) is what the model leaves out. SM = worker."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    a_ns, b_ns = np.asarray(a_ns, dtype=np.float64), np.asarray(b_ns, dtype=np.float64)
    jobs = a_ns.size
    if schedule == "separate":
        a_start, worker = _list_schedule(a_ns, workers)
        a_end = a_start + a_ns
        b_start, b_worker = _list_schedule(b_ns, workers, float(a_end.max()) + gap_ns)
    else:
        a_start, worker = _list_schedule(a_ns + b_ns, workers)
        a_end = a_start + a_ns
        b_start, b_worker = a_end, worker
    return {"written": np.ones(jobs, bool), "a_start_ns": a_start, "a_end_ns": a_end, "b_start_ns": b_start,
            "b_end_ns": b_start + b_ns, "job": np.arange(jobs),
            "worker": np.arange(jobs) if schedule != "queue" else worker,
            "sm_a": worker, "sm_b": b_worker}
