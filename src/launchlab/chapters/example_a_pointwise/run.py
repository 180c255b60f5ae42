"""Example A on the GPU: build (FMA contraction off), count the graphs' kernel nodes, validate every
variant exactly on three fixtures, time them warm, validate on a held-out fixture, then (outside timing)
read DRAM bytes with Nsight Compute and run compute-sanitizer over every variant."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.example_a_pointwise import (KERNEL_NODES, KERNELS, LARGE_ELEMENTS, PATHS, SUBMISSIONS,
                                                    parse_sizes, size_of, variant)
from launchlab.measure.protocol import Measured
from launchlab.model import dot
from launchlab.model import pointwise as model

BUILD_LABEL = "pointwise"


def run(session) -> None:
    from launchlab.gpu import pointwise, sanitizer

    parameters = session.parameters
    sizes = parse_sizes(parameters.sizes)
    built = session.build(BUILD_LABEL, pointwise.FAMILY, KERNELS["three"] + KERNELS["fused"],
                          extra_options=pointwise.EXTRA_OPTIONS)
    variants = {}
    for n in sizes:
        variants.update(size_variants(built, n, session.backend.stream))
    check_graphs(session, variants)
    session.require_passed("graph nodes")

    for index in range(model.FIXTURES_BEFORE_TIMING):
        validate(session, variants, sizes, index, "before")
    session.require_passed("before timing")
    session.measure("warm", [Measured(vid, v.invoke, launches=v.submissions, large=size_of(vid) >= LARGE_ELEMENTS)
                             for vid, v in variants.items()])
    validate(session, variants, sizes, model.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")

    profile_dram(session, parameters.profile_size)
    from launchlab.chapters.example_a_pointwise import sanitize as child

    sanitizer.record(session, child.__name__, child.PROBLEM)  # memcheck and racecheck, every variant, a separate process


def size_variants(built, n: int, stream) -> dict:
    """{VariantId: Target or GraphReplay} of one size: both paths on one x and one y, stream and graph."""
    from launchlab.gpu import pointwise

    made = pointwise.variants(built, n, stream)  # keyed three_stream, three_graph, ...
    return {variant(path, n, submission): made[f"{path}_{submission}"] for path in PATHS for submission in SUBMISSIONS}


def check_graphs(session, variants) -> None:
    """Each graph's DOT (kept under graphs/) must hold its path's kernel nodes and nothing else."""
    setup = {}
    for vid, v in variants.items():
        if vid.submission != "graph":
            continue
        session.writer.write_text(f"graphs/{vid}.dot", v.dot)
        setup[str(vid)] = v.setup
        counts = dot.node_counts(dot.parse_dot(v.dot), KERNELS[vid.target])
        session.check({"variant": str(vid), "fixture": None, "phase": "graph nodes",
                       "what": "kernel and other nodes in the captured graph's DOT", "counts": counts},
                      np.array([counts["kernel"], counts["other"]]), np.array([KERNEL_NODES[vid.target], 0]))
    session.writer.write_json("graphs/setup.json", setup)


def validate(session, variants, sizes, index: int, phase: str) -> None:
    """Every variant, bit for bit, on fixture `index` of every size (one fixture and oracle per size)."""
    for n in sizes:
        x = model.fixture(session.parameters.fixture_seed, index, n)
        reference = model.reference(x)
        for vid in (variant(path, n, submission) for path in PATHS for submission in SUBMISSIONS):
            session.check({"variant": str(vid), "fixture": index, "phase": phase, "what": "output"},
                          variants[vid].compute(x), reference, inputs=x)


def profile_dram(session, n: int) -> None:
    """Nsight Compute's DRAM bytes of both paths at n (a separate process): its CSV and how it ran,
    or the error where ncu is absent or may not read the counters. Never invented."""
    from launchlab.gpu import pointwise

    if not n:
        session.note("dram_profile", "not requested (profile_size 0)")
        return
    result = pointwise.profile_dram(int(n))
    session.writer.write_text(f"profiles/ncu_n{int(n)}.csv", result["csv"])
    session.writer.write_json(f"profiles/ncu_n{int(n)}.json", {k: v for k, v in result.items() if k != "csv"})
