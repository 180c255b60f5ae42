"""Chapter 1 on the GPU: validate the row path, time it warm, trace one invocation, time launches."""
from __future__ import annotations

from launchlab.chapters.ordinary_launches import (EMPTY_NATIVE, EMPTY_STREAM, LARGE_ELEMENTS, ROW_KERNELS,
                                                  row_variant)
from launchlab.measure.protocol import Measured
from launchlab.model import oracles, workloads


def run(session) -> None:
    from launchlab.gpu import native, probes
    from launchlab.gpu.targets import RowPath

    parameters = session.parameters
    shapes = workloads.parse_shapes(parameters.shapes)
    launch_shape = workloads.parse_shapes(parameters.launch_shape)[0]
    timed = session.build("row_softmax", "row_softmax", ROW_KERNELS)
    traced = session.build("row_softmax_traced", "row_softmax", ROW_KERNELS, {"LAUNCHLAB_TRACE": None})
    empty = session.build("empty", "empty", ("empty_kernel",))

    paths = {shape: RowPath(timed, *shape) for shape in {*shapes, launch_shape}}
    for shape in shapes:
        for index in range(workloads.FIXTURES_BEFORE_TIMING):
            validate(session, paths[shape], shape, index, "before")
    session.require_passed("before timing")

    session.measure("warm", [Measured(row_variant(*s), paths[s].invoke, launches=len(ROW_KERNELS),
                                      large=s[0] * s[1] >= LARGE_ELEMENTS) for s in shapes])
    for shape in shapes:
        validate(session, paths[shape], shape, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")

    for shape in shapes:  # instrumented, separate from timing
        traced_path = RowPath(traced, *shape)
        records = probes.attach_buffer(traced, len(ROW_KERNELS), shape[0])
        validate(session, traced_path, shape, 0, "traced build")  # also warms the traced kernels
        session.writer.write_arrays(f"traces/{workloads.shape_name(*shape)}.npz",
                                    **probes.collect(records, traced_path.invoke, len(ROW_KERNELS), shape[0]))
    session.require_passed("traced build")

    session.measure("enqueue", launch_cost_variants(session, empty, paths[launch_shape], launch_shape, native))


def validate(session, path, shape, index: int, phase: str) -> None:
    x = workloads.rms_softmax_fixture(session.parameters.fixture_seed, index, *shape)
    session.check({"variant": str(row_variant(*shape)), "fixture": index, "phase": phase},
                  path.compute(x), oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE, inputs=x)


def launch_cost_variants(session, empty_module, row_path, shape, native) -> list[Measured]:
    """Host-only enqueue loops: the empty kernel and the row path, from CuPy and from the C++ loop."""
    empty_kernel = empty_module.kernel("empty_kernel")
    variants = [Measured(EMPTY_STREAM, lambda: empty_kernel((1,), (1,), ())),
                Measured(row_variant(*shape), row_path.invoke, launches=len(ROW_KERNELS))]
    library, how = native.build_library()
    session.note("native_loop", {"built": library is not None, "how": how})
    if library is not None:
        launcher = native.NativeLauncher(library)
        stream = session.backend.stream.ptr
        packed_empty = launcher.prepare([(empty_kernel.kernel.ptr, 1, 1, ())])
        packed_row = launcher.prepare(row_path.native_launches())
        variants += [
            Measured(EMPTY_NATIVE, lambda: launcher.enqueue(packed_empty, stream, 1), timed_loop=lambda n: launcher.run(packed_empty, stream, n)),
            Measured(row_variant(*shape, "native"), lambda: launcher.enqueue(packed_row, stream, 1), launches=len(ROW_KERNELS),
                     timed_loop=lambda n: launcher.run(packed_row, stream, n)),
        ]
    return variants
