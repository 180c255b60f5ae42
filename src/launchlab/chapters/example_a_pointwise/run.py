"""Example A on the GPU: build (FMA contraction off), make every declared variant from its row (a graph variant
replays its stream twin's target), count the graphs' kernel nodes, validate every variant exactly on three
fixtures, time them warm, validate on a held-out fixture, then (outside timing) read DRAM bytes with Nsight
Compute and run compute-sanitizer's tools, each in a separate process."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.example_a_pointwise import CHAPTER, ROWS, is_large, kernels_of, model, size_of
from launchlab.measure.protocol import Measured
from launchlab.model import dot

BUILD_LABEL = "pointwise"


def run(session) -> None:
    from launchlab.chapters.example_a_pointwise import device
    from launchlab.chapters.example_a_pointwise import sanitize as child
    from launchlab.gpu import sanitizer
    from launchlab.gpu.capture import stream_and_graph

    parameters = session.parameters
    declared = CHAPTER.variants(parameters)
    built = session.build(BUILD_LABEL, device.FAMILY, tuple(k for row in ROWS for k in row.kernels),
                          extra_options=device.EXTRA_OPTIONS)
    context = device.Context(built)
    runners = stream_and_graph(declared, lambda v: v.row.make(context, v.id.case), session.backend.stream)
    check_graphs(session, runners)
    session.require_passed("graph nodes")

    timed = [v for v in declared if "timing" in v.enters]
    for index in range(model.FIXTURES_BEFORE_TIMING):
        validate(session, timed, runners, index, "before")
    session.require_passed("before timing")
    session.measure("warm", [Measured(v.id, runners[v.id].invoke, launches=runners[v.id].submissions,
                                      large=is_large(v.id)) for v in timed])
    validate(session, timed, runners, model.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")

    profile_dram(session, parameters.profile_size)
    sanitizer.record(session, child.__name__, child.PROBLEM)  # memcheck and racecheck, a separate process


def check_graphs(session, runners: dict) -> None:
    """Each graph's DOT (kept under graphs/) must hold its row's kernels as nodes and nothing else."""
    setup = {}
    for vid, runner in runners.items():
        if vid.submission != "graph":
            continue
        session.writer.write_text(f"graphs/{vid}.dot", runner.dot)
        setup[str(vid)] = runner.setup
        counts = dot.node_counts(dot.parse_dot(runner.dot), kernels_of(vid.target))
        session.check({"variant": str(vid), "fixture": None, "phase": "graph nodes",
                       "what": "kernel and other nodes in the captured graph's DOT", "counts": counts},
                      np.array([counts["kernel"], counts["other"]]), np.array([len(kernels_of(vid.target)), 0]))
    session.writer.write_json("graphs/setup.json", setup)


def validate(session, variants, runners: dict, index: int, phase: str) -> None:
    """Every variant, bit for bit, on fixture `index` of its size (one input per size, one reference per oracle)."""
    inputs, references = {}, {}
    for variant in variants:
        n, oracle = size_of(variant.id), variant.row.oracle
        if n not in inputs:
            inputs[n] = model.fixture(session.parameters.fixture_seed, index, n)
        if (n, oracle.name) not in references:
            references[n, oracle.name] = oracle.function(inputs[n])
        session.check({"variant": str(variant.id), "fixture": index, "phase": phase, "what": "output"},
                      runners[variant.id].compute(inputs[n]), references[n, oracle.name], oracle.tolerance,
                      inputs=inputs[n])


def profile_dram(session, n: int) -> None:
    """Nsight Compute's DRAM bytes of the profiled rows at n (a separate process): its CSV and how it ran,
    or the error where ncu is absent or may not read the counters. Never invented."""
    from launchlab.chapters.example_a_pointwise import profile

    if not n:
        session.note("dram_profile", "not requested (profile_size 0)")
        return
    result = profile.profile_dram(int(n))
    session.writer.write_text(f"profiles/ncu_n{int(n)}.csv", result["csv"])
    session.writer.write_json(f"profiles/ncu_n{int(n)}.json", {k: v for k, v in result.items() if k != "csv"})
