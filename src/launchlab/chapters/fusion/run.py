"""Chapter 3 on the GPU: build, make every declared row at each fixed shape on one input matrix, validate it
(fixtures drawn and checked on the device, sweep.py), capture its graphs, time warm and cold through the protocol,
validate again on the held-out fixture; then the sweep and the random plane (sweep.py; the plane with its shorter
protocol); then DRAM bytes with Nsight Compute (profile.py) and compute-sanitizer over every fused design, each in
a separate process.

Every variant comes from the declaration (CHAPTER.variants): what it enters (`table`, `sweep`) says where it
is timed, its L2 states whether it is timed warm, cold or both, its row how it is made and checked."""
from __future__ import annotations

import contextlib
import dataclasses

from launchlab.chapters.fusion import (CALLS_PER_GRAPH, CHAPTER, ROW_KERNELS, contenders, copy_kernel, dims, fused_plan,
                                       fused_plans, large, plan_kernels, requested_libraries, rows_entering)
from launchlab.chapters.fusion.targets import Context, by_case, invocations, make_rows
from launchlab.measure.protocol import Measured
from launchlab.model import workloads


def run(session) -> None:
    from launchlab.gpu.instruments import KERNELS as INSTRUMENT_KERNELS, ColdL2

    from launchlab.chapters.fusion.sweep import run_sweep, validate_on_device

    parameters, identity = session.parameters, session.record.device
    declared = CHAPTER.variants(parameters)
    plans = fused_plans(parameters, identity)
    session.note("fused_plans", plans)
    session.note("calls_per_graph", CALLS_PER_GRAPH)
    context = Context(session.backend.stream, build_modules(session, plans), plans)
    cold = ColdL2(session.build("instruments", "instruments", INSTRUMENT_KERNELS), identity["l2_bytes"],
                  identity["sm_count"], session.protocol.cold_wait_ns)
    session.note("cold_l2", cold.describe())
    session.phase("build")

    libraries = {name: {"requested": True, "unavailable": {}, "setup": {}} for name in requested_libraries(parameters)}
    session.note("baselines", libraries)  # filled in below; noted first so that a failed run keeps it too
    setup = {}
    fixed = {case: prepare_case(session, context, libraries, setup, case, variants)
             for case, variants in by_case(v for v in declared if "table" in v.enters).items()}
    session.require_passed("before timing")
    session.phase("setup and validation before timing")

    l2_states = {v.id: v.l2_states for v in declared}
    for invoked in fixed.values():
        session.measure("warm", [measured(vid, target) for vid, target in invoked.items() if "warm" in l2_states[vid]])
        session.measure("cold", [measured(vid, target) for vid, target in invoked.items() if "cold" in l2_states[vid]],
                        flush=cold.flush)
    session.phase("timing")

    for case, invoked in fixed.items():
        validate_on_device(session, invoked, *dims(case), workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")
    session.phase("validation after timing")
    del fixed
    context.inputs.clear()

    run_sweep(session, context, libraries, cold, setup, [v for v in declared if "sweep" in v.enters and "table" not in v.enters])
    session.phase("sweep")
    with plane_protocol(session):
        run_sweep(session, context, libraries, cold, setup, [v for v in declared if "plane" in v.enters])
    session.writer.write_json("graphs/setup.json", setup)
    session.phase("plane")

    profile(session, plans)
    session.phase("profile")
    sanitize(session)
    session.phase("compute-sanitizer")


@contextlib.contextmanager
def plane_protocol(session):
    """The plane's shorter protocol: the frozen one with `plane_rounds` rounds, recorded in run.json's details
    ("plane_protocol") and restored afterwards."""
    frozen = session.protocol
    session.protocol = dataclasses.replace(frozen, rounds=session.parameters.plane_rounds)
    session.note("plane_protocol", session.protocol.record())
    try:
        yield
    finally:
        session.protocol = frozen


BUILD_THREADS = 8  # builds compiled at once: NVRTC and nvcc's reports run outside the GIL, each in its own folder


def build_modules(session, plans: dict) -> dict:
    """{label: module}: the row path's, the copy kernel's, and one per distinct fused build of the plans, compiled
    BUILD_THREADS at a time (the plane needs a score of builds; each writes only its own builds/<label>/)."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = {"row_softmax": ("row_softmax", ROW_KERNELS, None),
              copy_kernel.MODULE: (copy_kernel.FAMILY, copy_kernel.KERNELS, copy_kernel.DEFINES)}
    for plan in plans.values():
        wanted.setdefault(plan["module"], (plan["family"], plan_kernels(plan), plan["defines"]))
    with ThreadPoolExecutor(BUILD_THREADS) as pool:
        built = {label: pool.submit(session.build, label, *how) for label, how in wanted.items()}
        return {label: future.result() for label, future in built.items()}


def prepare_case(session, context: Context, libraries: dict, setup: dict, case: str, variants) -> dict:
    """One fixed shape's invocations ({VariantId: stream target or graph replay}), validated before timing on
    fixtures drawn on the device (sweep.py: the float64 oracle run by CuPy, a large matrix on sampled rows): the
    stream targets on every fixture before timing, the graphs on fixture 0."""
    from launchlab.chapters.fusion.sweep import screen_on_device, validate_on_device

    names = list(dict.fromkeys(v.id.target for v in variants))
    targets = make_rows(session, context, libraries, case, names)
    screen_on_device(session, targets, *dims(case), libraries)
    streamed = invocations([v for v in variants if v.id.submission == "stream"], targets, context.stream, setup)
    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        validate_on_device(session, streamed, *dims(case), index, "before")
    graphs = invocations([v for v in variants if v.id.submission != "stream"], targets, context.stream, setup)
    validate_on_device(session, graphs, *dims(case), 0, "before")
    return {**streamed, **graphs}


def measured(vid, target) -> Measured:
    return Measured(vid, target.invoke, launches=target.submissions, large=large(vid))


def profile(session, plans: dict) -> None:
    """Nsight Compute's DRAM bytes of one call of each requested row entering the profile (the copy as a copy
    kernel), at each profile shape, after timing, in a separate process (profile.py)."""
    from launchlab.chapters.fusion import profile as ncu_profile

    names = [name for name in contenders(session.parameters) if name in rows_entering("profile")]
    for rows, cols in session.parameters.profile_shapes:
        shape = workloads.shape_name(rows, cols)
        plan = plans.get(shape) or fused_plan(rows, cols, session.record.device)
        result = ncu_profile.dram_bytes(rows, cols, plan, names)
        session.writer.write_text(f"profiles/ncu_{shape}.csv", result["csv"])
        session.writer.write_json(f"profiles/ncu_{shape}.json", {k: v for k, v in result.items() if k != "csv"})


def sanitize(session) -> None:
    """compute-sanitizer's tools (the `sanitizer_tools` parameter) over every fused design, small, and over the plan
    of the two smallest plane points of each design and the copy kernel, in a child process
    (chapters/fusion/sanitize.py); kept under sanitizer/. A finding is recorded and shown, not a failed run."""
    from launchlab.chapters.fusion import sanitize as child
    from launchlab.gpu import sanitizer

    if session.parameters.sanitizer_tools and rows_entering("sanitizer"):
        plane = f"{session.parameters.plane_points},{session.parameters.plane_seed}"
        sanitizer.record(session, child.__name__, child.PROBLEM + child.PLANE_PROBLEM,
                         tools=tuple(session.parameters.sanitizer_tools),
                         environment={child.PLANE_ENVIRONMENT: plane})
