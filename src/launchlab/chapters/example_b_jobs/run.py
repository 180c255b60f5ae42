"""Example B on the GPU: record the layout (jobs, workers, the shared-memory reservation) and check one active
CTA per SM, make every declared variant from its row (a graph variant replays its stream twin's target), count
the graphs' nodes (the queue's MEMSET among them), validate every variant exactly on three fixtures, time them
warm, validate on a held-out fixture (a changed seed), then trace every variant in a separate instrumented build
and hold each trace to its schedule's rules; last, compute-sanitizer's tools in a separate process."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.example_b_jobs import CHAPTER, GRAPH_NODES, KERNELS, ROWS, model
from launchlab.measure.protocol import Measured
from launchlab.model import dot

ALL_KERNELS = tuple(dict.fromkeys(kernel for row in ROWS for kernel in row.kernels))


def run(session) -> None:
    from launchlab.chapters.example_b_jobs import device
    from launchlab.chapters.example_b_jobs import sanitize as child
    from launchlab.gpu import sanitizer
    from launchlab.gpu.capture import stream_and_graph

    declared = CHAPTER.variants(session.parameters)
    layout = device.device_layout()
    for key in ("shared_memory", "sm_count", "jobs", "workers"):
        session.note(key, layout[key])
    context = device.Context(session.build("jobs", device.FAMILY, ALL_KERNELS), layout)
    runners = stream_and_graph(declared, lambda v: v.row.make(context, v.id.case), session.backend.stream)
    check_occupancy(session, runners)
    check_graphs(session, runners)
    session.require_passed("occupancy and graph nodes")

    timed = [v for v in declared if "timing" in v.enters]
    for index in range(model.FIXTURES_BEFORE_TIMING):
        validate_all(session, timed, runners, context, index, "before")
    session.require_passed("before timing")
    session.measure("warm", [Measured(v.id, runners[v.id].invoke, launches=runners[v.id].submissions) for v in timed])
    validate_all(session, timed, runners, context, model.HELD_OUT_FIXTURE, "after")  # a seed no earlier check used
    session.require_passed("after timing")

    trace_all(session, [v for v in declared if "trace" in v.enters], layout)
    session.require_passed("traces")
    sanitizer.record(session, child.__name__, child.PROBLEM)  # memcheck and racecheck, a separate process


def check_occupancy(session, runners: dict) -> None:
    """One active CTA per SM for every kernel with the reservation (the occupancy API), and how many fit
    without it: the reservation, not the code, is what keeps one job per SM."""
    from launchlab.chapters.example_b_jobs import device

    occupancy = {}
    for vid, target in runners.items():
        if vid.submission != "stream":
            continue  # a graph replays the same target's kernels
        reserved = target.active_ctas_per_sm()
        occupancy[str(vid)] = {"with_reservation": reserved,
                               "without_reservation": {name: device.active_ctas_per_sm(kernel, 0)
                                                       for name, kernel in target.kernels.items()}}
        session.check({"variant": str(vid), "fixture": None, "phase": "occupancy",
                       "what": "active CTAs per SM with the shared-memory reservation", "active": reserved},
                      np.array(list(reserved.values()), dtype=np.int64), np.ones(len(reserved), dtype=np.int64))
    session.note("occupancy", occupancy)


def memset_nodes(parsed: dict) -> int:
    return sum(1 for node in parsed["nodes"].values() if any("MEMSET" in line.upper() for line in node["label"]))


def check_graphs(session, runners: dict) -> None:
    """Each graph's DOT (kept under graphs/): its kernel nodes, other nodes and MEMSET nodes."""
    setup = {}
    for vid, replay in runners.items():
        if vid.submission != "graph":
            continue
        session.writer.write_text(f"graphs/{vid}.dot", replay.dot)
        setup[str(vid)] = replay.setup
        parsed = dot.parse_dot(replay.dot)
        counts = {**dot.node_counts(parsed, KERNELS[vid.target]), "memset": memset_nodes(parsed)}
        kernel, other = GRAPH_NODES[vid.target]
        session.check({"variant": str(vid), "fixture": None, "phase": "graph nodes",
                       "what": "kernel, other and MEMSET nodes in the captured graph's DOT", "counts": counts},
                      np.array([counts["kernel"], counts["other"], counts["memset"]]), np.array([kernel, other, other]))
    session.writer.write_json("graphs/setup.json", setup)


def reference(variant, problem, x: np.ndarray) -> np.ndarray:
    """The row's oracle on the case's iteration table."""
    return variant.row.oracle.function(x, problem.a_iters_host, problem.b_iters)


def validate_all(session, variants, runners: dict, context, index: int, phase: str) -> None:
    """Every variant on fixture `index` (the same input in every case; each case's own oracle)."""
    x = model.inputs(session.parameters.fixture_seed, index, context.layout["jobs"])
    references = {}
    for variant in variants:
        problem = context.problem(variant.id.case)
        key = (variant.id.case, variant.row.oracle.name)
        if key not in references:
            references[key] = reference(variant, problem, x)
        validate(session, variant.id, runners[variant.id], x, references[key], index, phase)


def validate(session, vid, runner, x, expected, index: int, phase: str) -> None:
    """The output exactly against the oracle; for the queue also its counter: jobs + workers after a run."""
    from launchlab.chapters.example_b_jobs import device

    labels = {"variant": str(vid), "fixture": index, "phase": phase, "what": "output"}
    session.check(labels, runner.compute(x), expected, inputs=x)
    target = device.underlying(runner)
    if isinstance(target, device.QueueJobs):
        session.check({**labels, "what": "queue counter after the invocation"},
                      np.array([target.head_after()], dtype=np.int64),
                      np.array([target.problem.jobs + target.workers], dtype=np.int64))


def trace_all(session, variants, layout: dict) -> None:
    """The instrumented build, separate from timing: every variant validated, traced once, its trace saved
    (compressed) and held to its schedule's rules."""
    from launchlab.chapters.example_b_jobs import device
    from launchlab.gpu.capture import stream_and_graph

    traced = session.build("jobs_traced", device.FAMILY, ALL_KERNELS, {"LAUNCHLAB_TRACE": None})
    records = device.attach_trace(traced, layout["jobs"])  # before any traced launch: a capture replays once
    context = device.Context(traced, layout)
    runners = stream_and_graph(variants, lambda v: v.row.make(context, v.id.case), session.backend.stream)
    x = model.inputs(session.parameters.fixture_seed, 0, layout["jobs"])
    for variant in variants:
        problem, runner = context.problem(variant.id.case), runners[variant.id]
        validate(session, variant.id, runner, x, reference(variant, problem, x), 0, "traced build")
        target = device.underlying(runner)
        workers = getattr(target, "workers", None)
        trace = device.collect_trace(records, runner.invoke)
        session.writer.write_arrays(f"traces/{variant.id}.npz", workers=np.int64(workers or problem.jobs), **trace)
        result = model.check_trace(trace, problem.jobs, target.schedule, workers)
        session.check({"variant": str(variant.id), "fixture": 0, "phase": "trace",
                       "what": f"trace rules of the {target.schedule} schedule", "checks": result["checks"]},
                      np.array(list(result["checks"].values()), dtype=bool), np.ones(len(result["checks"]), dtype=bool))
