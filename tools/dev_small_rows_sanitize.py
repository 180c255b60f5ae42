"""The kernels the latency work changed (the fused row kernel's three tiers, the narrow design), each at two small
shapes in both modes, checked against the float64 oracle: the child that compute-sanitizer (memcheck, racecheck,
synccheck) runs. Prints one line per check and "ALL PASSED" or "FAILED"; exit status 1 on a failed check.

    PYTHONPATH=src compute-sanitizer --tool racecheck python tools/dev_small_rows_sanitize.py [--cubins DIR]
        [--kinds normal,ramp,equal,spike]
    PYTHONPATH=src python tools/dev_small_rows_sanitize.py --build-cubins DIR     # nvcc, here
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import dev_small_rows as dev  # noqa: E402
from launchlab.chapters.fusion import plans  # noqa: E402
from launchlab.model import fused_policy  # noqa: E402

OPTIN = dev.H200["shared_bytes_per_block_optin"]
# (label, plan of the shape the build is chosen for, shapes it runs): two small shapes per changed kernel and tier
CASES = (
    ("row-b32-registers", ("row", 14, 147), ((3, 37), (2, 509))),
    ("row-b128-registers", ("row", 8, 1496), ((2, 1500), (1, 1073))),
    ("row-shared", ("row", 200, 5001), ((2, 5001), (3, 4099))),
    ("row-streamed", ("row", 200, 70001), ((2, 70001), (1, 60001))),
    ("narrow-r1", ("narrow", 201, 6, 1), ((5, 1), (7, 6))),
    ("narrow-r4", ("narrow", 33, 127, 4), ((33, 127), (3, 61))),
    ("narrow-r2-prefetch", ("narrow", 53, 55, 2, 1), ((9, 55), (4, 3))),
    ("narrow-r8", ("narrow", 17, 509, 8), ((17, 509), (2, 333))),
    ("row-b64-r2-latency", ("latency-row", 11, 375), ((11, 375), (3, 259))),
    ("row-b256-r2-latency", ("latency-row", 1, 1073), ((1, 1073), (2, 1001))),
    ("narrow-b128-r1-latency", ("latency-narrow", 201, 6, 1), ((201, 6), (129, 1))),
)


def plan_of(spec) -> dict:
    if spec[0] == "row":
        return plans.row_plan(spec[1], spec[2], OPTIN, None)
    if spec[0] == "latency-row":
        return plans.latency_row_variants(spec[1], spec[2])[0]
    if spec[0] == "latency-narrow":
        return plans.design_plan("narrow", fused_policy.design_defines(
            "narrow", spec[1], spec[2], 132, row_chunks=spec[3], block=plans.LATENCY_NARROW_BLOCK))
    _, rows, cols, row_chunks, *prefetch = spec
    choices = {"row_chunks": row_chunks, "block": plans.NARROW_BLOCK, **({"prefetch": 1} if prefetch else {})}
    return plans.design_plan("narrow", fused_policy.design_defines("narrow", rows, cols, 132, **choices))


def matrix(kind: str, rows: int, cols: int):
    """normal noise; a steep ramp (threads' maxima far below the row's); equal values; noise with one spike."""
    import cupy

    rng = cupy.random.default_rng(rows * 7919 + cols)
    if kind == "ramp":
        x = cupy.tile(cupy.linspace(-60.0, 60.0, cols), (rows, 1)) + rng.standard_normal((rows, cols)) * 0.1
    elif kind == "equal":
        x = cupy.full((rows, cols), 3.25)
    else:
        x = rng.standard_normal((rows, cols)) * 2.0
        if kind == "spike":
            x[cupy.arange(rows), rng.integers(0, cols, rows)] += 40.0
    return cupy.ascontiguousarray(x, dtype=cupy.float32)


def check(kinds) -> int:
    import cupy

    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import build
    from launchlab.model import oracles

    cache, failed = {}, 0
    for label, spec, shapes in CASES:
        plan = plan_of(spec)
        module = dev.load(build.KERNEL_DIR, plan["family"], plan["defines"], cache)
        for (rows, cols), kind in ((shape, kind) for shape in shapes for kind in kinds):
            x = matrix(kind, rows, cols)
            for mode, oracle, tolerance in (("plain", oracles.softmax, oracles.SOFTMAX_TOLERANCE),
                                            ("rms", oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE)):
                shared = plan.get("shared_bytes") or 0
                if plan["design"] == "row" and plan["tier"] == "shared":
                    shared = 16 * fused_policy.worst_chunks(rows, cols)
                target = make_fused({plan["module"]: module}, {**plan, "shared_bytes": shared}, rows, cols, mode, x)
                target.y.fill(float("nan"))
                target.invoke()
                cupy.cuda.get_current_stream().synchronize()
                passed = oracles.compare(target.y, oracle(x, xp=cupy), tolerance, xp=cupy)["passed"]
                failed += not passed
                print(f"{label} {plan['tag']} {rows}x{cols} {kind} {mode}: {'passed' if passed else 'FAILED'}", flush=True)
    print("ALL PASSED" if not failed else f"FAILED {failed}", flush=True)
    return 1 if failed else 0


def needed() -> dict:
    """{label: (folder, family, defines)} of the builds the checks load."""
    from launchlab.gpu import build

    found = {}
    for _, spec, _ in CASES:
        plan = plan_of(spec)
        found[dev.module_label(build.KERNEL_DIR, plan["family"], plan["defines"])] = (
            build.KERNEL_DIR, plan["family"], plan["defines"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--build-cubins", type=Path)
    parser.add_argument("--kinds", default="normal", help="matrices: normal,ramp,equal,spike")
    args = parser.parse_args()
    if args.build_cubins:
        dev.build_modules(needed(), args.build_cubins)
        return 0
    dev.CUBINS = args.cubins
    return check(args.kinds.split(","))


if __name__ == "__main__":
    sys.exit(main())
