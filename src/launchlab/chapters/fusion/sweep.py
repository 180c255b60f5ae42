"""Chapter 3's sweep on the GPU: at every sweep shape (4096 rows x 128 i, 128 rows x N), the declared rows that
enter the sweep on one input buffer, validated, then timed with the frozen protocol, warm L2 from a graph of
sweep_calls(rows, cols) calls and cold L2 from single stream calls after the flush, then validated again.

The sweep moves about 1.4 G elements per fixture, too many to generate and check on the host in a run of a few
minutes. Its fixtures are drawn on the GPU (CuPy's RandomState seeded with the fixture's seed, the same recipe as
workloads.rms_softmax_fixture) and checked there against each row's float64 oracle (with xp=cupy). Its checks
record the generator and seed instead of array hashes.
"""
from __future__ import annotations

from launchlab.chapters.fusion import dims, is_library, large, row
from launchlab.chapters.fusion.targets import by_case, invocations, make_rows, screen_libraries
from launchlab.measure.protocol import Measured
from launchlab.model import oracles, workloads

GENERATOR = "cupy.random.RandomState"
SWEEP_GROUP = 8  # sweep shapes set up, timed (in shared shuffled rounds) and checked together
SAMPLE_ABOVE = 1 << 22  # a matrix of more floats is checked against the float64 oracle on SAMPLE_ROWS rows ...
SAMPLE_ROWS = 64        # ... spread evenly from the first to the last, and for finiteness in every element


def device_fixture(base_seed: int, index: int, rows: int, cols: int):
    """The RMS-softmax fixture's recipe on the GPU: per-row scales in [0.25, 4), normal values, one +12 spike
    per row. Same seed, same matrix (for a given CuPy)."""
    import cupy

    generator = cupy.random.RandomState(workloads.fixture_seed(base_seed, index))
    scale = generator.uniform(0.25, 4.0, size=(rows, 1), dtype=cupy.float32)
    x = generator.standard_normal((rows, cols), dtype=cupy.float32) * scale
    spikes = generator.randint(0, cols, size=rows)
    x[cupy.arange(rows), spikes] += cupy.float32(12.0)
    return x


def compute_on_device(variant, x, stream):
    """One poisoned invocation of a variant on a device fixture; its y, on the device."""
    variant.load(x)
    variant.poison()
    variant.invoke()
    stream.synchronize()
    return variant.device_output()


def sampled_rows(rows: int, cols: int) -> list[int] | None:
    """The rows a large matrix is checked on against the float64 oracle (None: every row)."""
    if rows * cols <= SAMPLE_ABOVE or rows <= SAMPLE_ROWS:
        return None
    return sorted({round(i * (rows - 1) / (SAMPLE_ROWS - 1)) for i in range(SAMPLE_ROWS)})


def compare_on_device(oracle, y, x, references: dict, xp=None) -> dict:
    """y against a row's oracle on the device fixture x: bit for bit for an exact oracle (the copy), else within
    its tolerance of the float64 reference (kept in `references` by oracle for the other rows of the fixture). A
    large matrix is compared on sampled rows (sampled_rows; softmax is per row, so a row's reference is the
    oracle of that row alone), and every one of its elements must be finite."""
    if xp is None:
        import cupy as xp

    if oracle.tolerance is None:
        expected = oracle.function(x, xp=xp)
        differing = int(xp.count_nonzero(y.view(xp.uint32) != expected.view(xp.uint32)))
        return {"passed": differing == 0, "elements": int(y.size), "failing_elements": differing, "exact": True}
    sample = sampled_rows(*x.shape)
    if oracle.name not in references:
        references[oracle.name] = oracle.function(x if sample is None else x[xp.asarray(sample)], xp=xp)
    if sample is None:
        return oracles.compare(y, references[oracle.name], oracle.tolerance, xp=xp)
    result = oracles.compare(y[xp.asarray(sample)], references[oracle.name], oracle.tolerance, xp=xp)
    not_finite = int(y.size - xp.count_nonzero(xp.isfinite(y)))
    return {**result, "passed": bool(result["passed"] and not_finite == 0), "sampled_rows": len(sample),
            "not_finite_elements": not_finite}


def validate_on_device(session, invoked: dict, rows: int, cols: int, index: int, phase: str) -> None:
    """Every invocation's output on one device fixture against its row's oracle (the copy: exactly x)."""
    import cupy

    x = device_fixture(session.parameters.fixture_seed, index, rows, cols)
    references = {}
    stream = session.backend.stream
    for vid, variant in invoked.items():
        y = compute_on_device(variant, x, stream)
        labels = {"variant": str(vid), "fixture": index, "phase": phase, "on_device": True,
                  "input": {"generator": GENERATOR, "seed": workloads.fixture_seed(session.parameters.fixture_seed, index)}}
        session.add_check(labels, compare_on_device(row(vid.target).oracle, y, x, references))
    del references
    cupy.get_default_memory_pool().free_all_blocks()


def screen_on_device(session, targets: dict, rows: int, cols: int, libraries: dict) -> None:
    """A library that raises on its first call (a compiler that refuses the shape) or fails its oracle on device
    fixture 0 is recorded with the reason and dropped, never timed."""
    x = device_fixture(session.parameters.fixture_seed, 0, rows, cols)
    references, outputs = {}, {}
    stream = session.backend.stream
    case = workloads.shape_name(rows, cols)
    for name in [n for n in targets if is_library(n)]:
        try:
            outputs[name] = compute_on_device(targets[name], x, stream)
        except Exception as error:  # the library's own failure: its variants at the shape are skipped with it
            reason = f"failed on its first call ({type(error).__name__}: {error}); not timed"
            libraries[name]["unavailable"][case] = reason
            session.skip_all(reason, name, case)
            del targets[name]
    screen_libraries(session, targets, case, libraries, lambda name, target: compare_on_device(
        row(name).oracle, outputs[name], x, references))


def run_sweep(session, context, libraries: dict, cold, setup: dict, variants) -> None:
    """The sweep's variants SWEEP_GROUP shapes at a time: targets, validation, graphs, then warm and cold timing of
    the group's variants together (shuffled rounds over the group), validation after; the buffers are freed
    before the next group."""
    points = list(by_case(variants).items())
    if not points:
        return
    import cupy

    for start in range(0, len(points), SWEEP_GROUP):
        group, invoked = points[start:start + SWEEP_GROUP], {}
        for case, point in group:
            invoked[case] = prepare_point(session, context, libraries, setup, case, point)
        session.require_passed("before timing (sweep)")
        l2_states = {v.id: v.l2_states for _, point in group for v in point}
        for l2, flush in (("warm", None), ("cold", cold.flush)):
            session.measure(l2, [Measured(vid, t.invoke, launches=t.submissions, large=large(vid))
                                 for case in invoked for vid, t in invoked[case].items() if l2 in l2_states[vid]],
                            flush=flush)
        for case, _ in group:
            validate_on_device(session, {vid: t for vid, t in invoked[case].items() if "warm" in l2_states[vid]},
                               *dims(case), workloads.HELD_OUT_FIXTURE, "after")
            context.release(case)
        session.require_passed("after timing (sweep)")
        del invoked
        cupy.get_default_memory_pool().free_all_blocks()


def prepare_point(session, context, libraries: dict, setup: dict, case: str, variants) -> dict:
    """One sweep point's invocations ({VariantId: graph replay or stream target}), validated on fixture 0."""
    names = list(dict.fromkeys(v.id.target for v in variants))
    targets = make_rows(session, context, libraries, case, names)
    screen_on_device(session, targets, *dims(case), libraries)
    invoked = invocations(variants, targets, context.stream, setup)
    validate_on_device(session, invoked, *dims(case), 0, "before")
    return invoked
