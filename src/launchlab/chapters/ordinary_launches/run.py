"""Chapter 1 on the GPU: validate the row path, time it warm, trace one invocation, time launches.

Every declared variant is made from its row; what it enters (`timing`, `launch_cost`) says how it is measured.
A variant from the C++ loop is skipped, with the reason, where no C++ compiler builds the loop."""
from __future__ import annotations

import dataclasses

from launchlab.chapters.ordinary_launches import CHAPTER, EMPTY, ROW_KERNELS, ROW_PATH, is_large
from launchlab.measure.protocol import Measured
from launchlab.model import workloads


@dataclasses.dataclass
class Context:
    """What the rows' `make` reads: the built modules."""
    modules: dict


def run(session) -> None:
    from launchlab.gpu import native

    parameters = session.parameters
    declared = CHAPTER.variants(parameters)
    context = Context({"row_softmax": session.build("row_softmax", "row_softmax", ROW_PATH.kernels),
                       "empty": session.build("empty", "empty", EMPTY.kernels)})
    traced = session.build("row_softmax_traced", "row_softmax", ROW_PATH.kernels, {"LAUNCHLAB_TRACE": None})
    streamed = {v.id: v.row.make(context, v.id.case) for v in declared if v.id.submission == "stream"}
    # the C++ loop launches the stream target's kernels
    targets = {**streamed, **{vid.with_submission("native"): target for vid, target in streamed.items()}}

    timed = [v for v in declared if "timing" in v.enters]
    for variant in timed:
        for index in range(workloads.FIXTURES_BEFORE_TIMING):
            validate(session, variant, targets[variant.id], index, "before")
    session.require_passed("before timing")
    session.measure("warm", [Measured(v.id, targets[v.id].invoke, launches=targets[v.id].submissions,
                                      large=is_large(v.id)) for v in timed])
    for variant in timed:
        validate(session, variant, targets[variant.id], workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")

    for variant in timed:  # instrumented, separate from timing
        trace(session, traced, variant)
    session.require_passed("traced build")

    library, how = native.build_library()
    session.note("native_loop", {"built": library is not None, "how": how})
    launch_cost = [v for v in declared if "launch_cost" in v.enters]
    if library is None:
        for variant in (v for v in launch_cost if v.id.submission == "native"):
            session.skip(variant.id, f"the native C++ loop was not built: {how}")
    session.measure("enqueue", [measured_launches(session, targets[v.id], v.id, library)
                                for v in launch_cost if v.id.submission == "stream" or library is not None])


def validate(session, variant, target, index: int, phase: str) -> None:
    x = workloads.rms_softmax_fixture(session.parameters.fixture_seed, index, *workloads.parse_shapes(variant.id.case)[0])
    oracle = variant.row.oracle
    session.check({"variant": str(variant.id), "fixture": index, "phase": phase},
                  target.compute(x), oracle.function(x), oracle.tolerance, inputs=x)


def trace(session, traced_module, variant) -> None:
    """One invocation of the traced build: each block's start, end and SM (validated first, which also warms it)."""
    from launchlab.gpu import probes

    traced_path = variant.row.make(Context({"row_softmax": traced_module}), variant.id.case)
    rows = traced_path.rows
    records = probes.attach_buffer(traced_module, len(ROW_KERNELS), rows)
    validate(session, variant, traced_path, 0, "traced build")
    session.writer.write_arrays(f"traces/{variant.id.case}.npz",
                                **probes.collect(records, traced_path.invoke, len(ROW_KERNELS), rows))


def measured_launches(session, target, vid, library) -> Measured:
    """Host-only enqueue loop of one variant: from CuPy (`stream`) or from the C++ loop (`native`)."""
    if vid.submission == "stream":
        return Measured(vid, target.invoke, launches=target.submissions)
    from launchlab.gpu import native

    launcher, stream = native.NativeLauncher(library), session.backend.stream.ptr
    packed = launcher.prepare(target.native_launches())
    return Measured(vid, lambda: launcher.enqueue(packed, stream, 1), launches=target.submissions,
                    timed_loop=lambda n: launcher.run(packed, stream, n))
