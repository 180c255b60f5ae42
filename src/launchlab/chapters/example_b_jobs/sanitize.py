"""The child side of Example B's compute-sanitizer runs (`python -m launchlab.chapters.example_b_jobs.sanitize`):
every declared row in every case with the device's job table and the stage iterations divided by WORK_DIVISOR,
from the stream and replayed from its graph, in the timed and the traced build; each output checked exactly
against the row's oracle and each trace against its schedule's rules."""
from __future__ import annotations

import sys

WORK_DIVISOR = 64
SEED = 1
PROBLEM = (f"every variant in both cases, the device's job table with stage iterations divided by {WORK_DIVISOR}, "
           f"timed and traced builds (traces checked too)")


def inner_checks(backend) -> dict:
    """{"<build>.<VariantId>": passed} and, in the traced build, {"traced.<VariantId>.trace": passed}."""
    from launchlab.chapters.example_b_jobs import CHAPTER, Parameters, device, model
    from launchlab.chapters.declaration import Names
    from launchlab.gpu.capture import stream_and_graph

    variants = [v for v in CHAPTER.variants(Parameters(cases=Names(model.CASES))) if "sanitizer" in v.enters]
    layout = device.device_layout()
    checks = {}
    for build_name in ("timed", "traced"):
        built = device.load(traced=build_name == "traced")
        records = device.attach_trace(built, layout["jobs"]) if build_name == "traced" else None  # before any launch
        context = device.Context(built, layout, WORK_DIVISOR)
        runners = stream_and_graph(variants, lambda v: v.row.make(context, v.id.case), backend.stream)
        for variant in variants:
            problem, runner = context.problem(variant.id.case), runners[variant.id]
            x = model.inputs(SEED, 0, problem.jobs)
            expected = variant.row.oracle.function(x, problem.a_iters_host, problem.b_iters)
            label = f"{build_name}.{variant.id}"
            checks[label] = model.compare_exact(runner.compute(x), expected)["passed"]
            if records is not None:
                target = device.underlying(runner)
                trace = device.collect_trace(records, runner.invoke)
                result = model.check_trace(trace, problem.jobs, target.schedule, getattr(target, "workers", None))
                checks[f"{label}.trace"] = result["passed"]
    return checks


if __name__ == "__main__":
    from launchlab.gpu.sanitizer import child_main

    sys.exit(child_main(PROBLEM, inner_checks))
