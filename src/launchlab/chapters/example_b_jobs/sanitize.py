"""The child side of Example B's compute-sanitizer runs (`python -m launchlab.chapters.example_b_jobs.sanitize`):
every variant in both cases with the device's job table and the stage iterations divided by WORK_DIVISOR, in the
timed and the traced build, each output checked exactly against the oracle and each trace against its schedule."""
from __future__ import annotations

import sys

WORK_DIVISOR = 64
SEED = 1
PROBLEM = (f"every variant in both cases, the device's job table with stage iterations divided by {WORK_DIVISOR}, "
           f"timed and traced builds (traces checked too)")


def inner_checks(backend) -> dict:
    from launchlab.gpu import device, jobs
    from launchlab.model import jobs as model

    checks = {}
    count = model.job_count(device.sm_count())
    for build_name in ("timed", "traced"):
        built = jobs.load(traced=build_name == "traced")
        records = jobs.attach_trace(built, count) if build_name == "traced" else None  # before any traced launch
        for case in model.CASES:
            problem = jobs.JobProblem(model.a_iterations(case, count) // WORK_DIVISOR, model.B_ITERATIONS // WORK_DIVISOR)
            x = model.inputs(SEED, 0, problem.jobs)
            reference = problem.reference(x)
            for name, variant in jobs.variants(built, problem, backend.stream).items():
                label = f"{build_name}.{name}.{case}"
                checks[label] = model.compare_exact(variant.compute(x), reference)["passed"]
                if records is not None:
                    target = jobs.underlying(variant)
                    trace = jobs.collect_trace(records, variant.invoke)
                    result = model.check_trace(trace, problem.jobs, target.schedule, getattr(target, "workers", None))
                    checks[f"{label}.trace"] = result["passed"]
    return checks


if __name__ == "__main__":
    from launchlab.gpu.sanitizer import child_main

    sys.exit(child_main(PROBLEM, inner_checks))
