"""Example B on the GPU: record the shared-memory reservation and check one active CTA per SM, count the
graphs' nodes (the queue's MEMSET among them), validate every variant exactly on three fixtures, time them
warm, validate on a held-out fixture (a changed seed), then trace every variant in a separate
instrumented build and hold each trace to its schedule's rules; last, compute-sanitizer over every variant."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.example_b_jobs import GRAPH_NODES, KERNELS, SCHEDULES, SUBMISSIONS, parse_cases, variant
from launchlab.measure.protocol import Measured
from launchlab.model import dot
from launchlab.chapters.example_b_jobs import model

ALL_KERNELS = tuple(kernel for schedule in SCHEDULES for kernel in KERNELS[schedule])


def run(session) -> None:
    from launchlab.chapters.example_b_jobs import device as jobs
    from launchlab.gpu import sanitizer

    cases = parse_cases(session.parameters.cases)
    layout = note_layout(session)
    built = session.build("jobs", jobs.FAMILY, ALL_KERNELS)
    problems = {case: jobs.JobProblem(model.a_iterations(case, layout["jobs"])) for case in cases}
    timed = {}
    for case in cases:
        timed.update(case_variants(built, problems[case], case, session.backend.stream, layout))
    check_occupancy(session, timed)
    check_graphs(session, timed)
    session.require_passed("occupancy and graph nodes")

    for index in range(model.FIXTURES_BEFORE_TIMING):
        validate_all(session, timed, problems, index, "before")
    session.require_passed("before timing")
    session.measure("warm", [Measured(vid, v.invoke, launches=v.submissions) for vid, v in timed.items()])
    validate_all(session, timed, problems, model.HELD_OUT_FIXTURE, "after")  # a seed no earlier check used
    session.require_passed("after timing")

    trace_all(session, cases, layout)
    session.require_passed("traces")
    sanitizer.record(session, "jobs")  # memcheck and racecheck, every variant, a separate process


def note_layout(session) -> dict:
    """Jobs, workers and the per-CTA shared-memory reservation, from the device; all kept in run.json."""
    from launchlab.chapters.example_b_jobs import device as jobs

    shared = jobs.shared_memory()
    sms = jobs.sm_count()
    layout = {"sm_count": sms, "jobs": model.job_count(sms), "workers": sms,
              "dynamic_shared_bytes": shared["dynamic_shared_bytes"]}
    session.note("shared_memory", shared)
    for key in ("sm_count", "jobs", "workers"):
        session.note(key, layout[key])
    return layout


def case_variants(built, problem, case: str, stream, layout: dict) -> dict:
    """{VariantId: Target or GraphReplay} of one case: the three schedules on one problem, stream and graph."""
    from launchlab.chapters.example_b_jobs import device as jobs

    made = jobs.variants(built, problem, stream, layout["dynamic_shared_bytes"], layout["workers"])
    return {variant(schedule, case, submission): made[f"{schedule}_{submission}"]
            for schedule in SCHEDULES for submission in SUBMISSIONS}


def check_occupancy(session, variants) -> None:
    """One active CTA per SM for every kernel with the reservation (the occupancy API), and how many fit
    without it: the reservation, not the code, is what keeps one job per SM."""
    from launchlab.chapters.example_b_jobs import device as jobs

    occupancy = {}
    for vid, target in variants.items():
        if vid.submission != "stream":
            continue  # a graph replays the same target's kernels
        reserved = target.active_ctas_per_sm()
        occupancy[str(vid)] = {"with_reservation": reserved,
                               "without_reservation": {name: jobs.active_ctas_per_sm(kernel, 0)
                                                       for name, kernel in target.kernels.items()}}
        session.check({"variant": str(vid), "fixture": None, "phase": "occupancy",
                       "what": "active CTAs per SM with the shared-memory reservation", "active": reserved},
                      np.array(list(reserved.values()), dtype=np.int64), np.ones(len(reserved), dtype=np.int64))
    session.note("occupancy", occupancy)


def memset_nodes(parsed: dict) -> int:
    return sum(1 for node in parsed["nodes"].values() if any("MEMSET" in line.upper() for line in node["label"]))


def check_graphs(session, variants) -> None:
    """Each graph's DOT (kept under graphs/): its kernel nodes, other nodes and MEMSET nodes."""
    setup = {}
    for vid, v in variants.items():
        if vid.submission != "graph":
            continue
        session.writer.write_text(f"graphs/{vid}.dot", v.dot)
        setup[str(vid)] = v.setup
        parsed = dot.parse_dot(v.dot)
        counts = {**dot.node_counts(parsed, KERNELS[vid.target]), "memset": memset_nodes(parsed)}
        kernel, other = GRAPH_NODES[vid.target]
        session.check({"variant": str(vid), "fixture": None, "phase": "graph nodes",
                       "what": "kernel, other and MEMSET nodes in the captured graph's DOT", "counts": counts},
                      np.array([counts["kernel"], counts["other"], counts["memset"]]), np.array([kernel, other, other]))
    session.writer.write_json("graphs/setup.json", setup)


def validate_all(session, variants, problems: dict, index: int, phase: str) -> None:
    """Every variant on fixture `index` (the same input in every case; each case's own oracle)."""
    x = model.inputs(session.parameters.fixture_seed, index, next(iter(problems.values())).jobs)
    for case, problem in problems.items():
        reference = problem.reference(x)
        for vid, v in variants.items():
            if vid.case == case:
                validate(session, vid, v, x, reference, index, phase)


def validate(session, vid, v, x, reference, index: int, phase: str) -> None:
    """The output exactly against the oracle; for the queue also its counter: jobs + workers after a run."""
    from launchlab.chapters.example_b_jobs import device as jobs

    labels = {"variant": str(vid), "fixture": index, "phase": phase, "what": "output"}
    session.check(labels, v.compute(x), reference, inputs=x)
    target = jobs.underlying(v)
    if isinstance(target, jobs.QueueJobs):
        session.check({**labels, "what": "queue counter after the invocation"},
                      np.array([target.head_after()], dtype=np.int64),
                      np.array([target.problem.jobs + target.workers], dtype=np.int64))


def trace_all(session, cases, layout: dict) -> None:
    """The instrumented build, separate from timing: every variant validated, traced once, its trace saved
    (compressed) and held to its schedule's rules."""
    from launchlab.chapters.example_b_jobs import device as jobs

    traced = session.build("jobs_traced", jobs.FAMILY, ALL_KERNELS, {"LAUNCHLAB_TRACE": None})
    records = jobs.attach_trace(traced, layout["jobs"])  # before any traced launch: a capture replays once
    x = model.inputs(session.parameters.fixture_seed, 0, layout["jobs"])
    for case in cases:
        problem = jobs.JobProblem(model.a_iterations(case, layout["jobs"]))
        reference = problem.reference(x)
        for vid, v in case_variants(traced, problem, case, session.backend.stream, layout).items():
            validate(session, vid, v, x, reference, 0, "traced build")
            target = jobs.underlying(v)
            workers = getattr(target, "workers", None)
            trace = jobs.collect_trace(records, v.invoke)
            session.writer.write_arrays(f"traces/{vid}.npz", workers=np.int64(workers or problem.jobs), **trace)
            result = model.check_trace(trace, problem.jobs, target.schedule, workers)
            session.check({"variant": str(vid), "fixture": 0, "phase": "trace",
                           "what": f"trace rules of the {target.schedule} schedule", "checks": result["checks"]},
                          np.array(list(result["checks"].values()), dtype=bool),
                          np.ones(len(result["checks"]), dtype=bool))
