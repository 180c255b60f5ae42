"""Device checks for chapter 4 (megakernels), for a development run on a GPU host.

    python3 tools/gpu_megakernel_check.py --quick              # every variant: oracle, a short time, a trace
    compute-sanitizer --tool memcheck python3 tools/gpu_megakernel_check.py --sanitize
                                                               # every variant once on small irregular rows

The chapter itself runs with `python -m launchlab execute megakernels`.

Both build the chapter's own variants (chapters/megakernels/targets.case_variants). --quick is development
evidence only (it never enters a run): each variant is validated on fixture 0, timed by the measurement
protocol's warm measurement with a shortened protocol (QUICK), then its traced build is validated and
traced once and the trace is summarised against its schedule's model.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SANITIZE_ROWS = [1, 1023, 1025, 5000, 3, 2048, 4096]


def load_modules(traced: bool) -> dict:
    from launchlab.gpu import build

    defines = {"LAUNCHLAB_TRACE": None} if traced else None
    return {family: build.load_module(family, defines) for family in ("tiled_softmax", "megakernel")}


def validate(variant, values) -> dict:
    """The oracle check, and for the queue its error word and counters against the model's."""
    import numpy as np

    from launchlab.chapters.megakernels import persistent
    from launchlab.model import oracles

    target = persistent.underlying(variant)
    path = getattr(target, "path", target)
    if isinstance(target, persistent.TaskQueue):
        target.clear_error()
    result = oracles.compare(variant.compute(values), oracles.rms_softmax_packed(values, path.row_offsets),
                             oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    if isinstance(target, persistent.TaskQueue):
        result["queue_error"] = target.error_message()
        result["passed"] &= bool(np.array_equal(target.words_after(), target.expected_words()))
    return result


def quick(cases, sweep) -> int:
    from launchlab.chapters.megakernels import design_of, persistent, schedules, targets
    from launchlab.gpu import device, probes
    from launchlab.gpu.backend import CupyBackend
    from launchlab.measure import protocol, stats
    from launchlab.model import workloads

    backend = CupyBackend()
    timed_modules, traced_modules = load_modules(False), load_modules(True)
    stage_records = probes.attach_buffer(traced_modules["tiled_softmax"], 3, 1024)
    task_records = probes.attach_task_buffer(traced_modules["megakernel"], 2 * 1024 + 128)
    slots = persistent.resident_blocks_per_sm(timed_modules["tiled_softmax"].kernel("tile_producer")) * device.sm_count()
    quick_protocol = protocol.MeasurementProtocol(warmups=5, rounds=5, batch=100)
    status, rows = 0, []
    for case in cases:
        lengths = workloads.tiled_row_lengths(case)
        graph = schedules.TaskGraph.from_lengths(lengths)
        values = workloads.packed_fixture(2026, 0, lengths)
        timed = targets.case_variants(timed_modules, case, 0, sweep, backend.stream)
        traced = targets.case_variants(traced_modules, case, 0, sweep, backend.stream)
        checked = {vid: validate(variant, values)["passed"] for vid, variant in timed.items()}
        samples = protocol.measure_warm([protocol.Measured(vid, v.invoke, launches=v.submissions)
                                         for vid, v in timed.items() if checked[vid]], backend, quick_protocol)
        timing = stats.summarize(samples)
        for vid, variant in traced.items():
            row = {"variant": str(vid), "oracle": "ok" if checked[vid] else "FAILED"}
            try:
                row["us"] = timing[str(vid)]["warm_batch"]["event_us"]["median"] if checked[vid] else float("nan")
                row["traced_oracle"] = "ok" if validate(variant, values)["passed"] else "FAILED"
                workers = getattr(persistent.underlying(variant), "workers", slots)
                trace = schedules.Trace.from_arrays(persistent.trace(variant, task_records, stage_records))
                summary = schedules.trace_summary(trace, graph, design_of(vid)[0].schedule, workers)
                row.update({"checks": "ok" if summary["passed"] else "FAILED " + json.dumps(summary["checks"]),
                            "b<lastA": summary["b_before_last_a"], "model_b<lastA": summary["model"]["b_before_last_a"],
                            "span_us": summary["makespan_ns"] / 1e3, "model_us": summary["model"]["makespan_ns"] / 1e3,
                            "workers": workers})
                status |= not (summary["passed"] and checked[vid] and row["traced_oracle"] == "ok")
            except Exception as error:  # report and go on: one device call must show everything
                row["error"] = f"{type(error).__name__}: {error}"
                status = 1
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"{'variant':>26} {'oracle':>6} {'us':>8} {'workers':>7} {'b<lastA':>7} {'model':>5} {'span us':>8} {'model':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['variant']:>26} ERROR {r['error'][:200]}")
            continue
        print(f"{r['variant']:>26} {r['oracle']:>6} {r['us']:8.2f} {r['workers']:7d} {r['b<lastA']:7d} "
              f"{r['model_b<lastA']:5d} {r['span_us']:8.1f} {r['model_us']:8.1f} {r['checks'][:60]}")
    return status


def sanitize(sweep) -> int:
    """Every variant once, timed and traced builds, on small irregular rows: for compute-sanitizer."""
    from launchlab.chapters.megakernels import schedules, targets
    from launchlab.gpu import probes
    from launchlab.gpu.backend import CupyBackend
    from launchlab.model import workloads

    backend = CupyBackend()
    graph = schedules.TaskGraph.from_lengths(SANITIZE_ROWS)
    values = workloads.packed_fixture(99, 0, SANITIZE_ROWS)
    status = 0
    for traced in (False, True):
        modules = load_modules(traced)
        if traced:  # the probes write through these pointers: attach before any traced launch
            probes.attach_buffer(modules["tiled_softmax"], 3, graph.tiles)
            probes.attach_task_buffer(modules["megakernel"], graph.total)
        for vid, variant in targets.case_variants(modules, "sanitize", 0, sweep, backend.stream, lengths=SANITIZE_ROWS).items():
            passed = validate(variant, values)["passed"]
            status |= not passed
            print("sanitize", "traced" if traced else "timed", vid, "ok" if passed else "FAILED", flush=True)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", default="balanced,ragged")
    parser.add_argument("--sweep", default="1,8", help="blocks per SM of the persistent kernels' sweep points")
    parser.add_argument("--sanitize", action="store_true")
    args = parser.parse_args()
    from launchlab.chapters.megakernels import CHAPTER, sweep_points

    parameters = CHAPTER.parse_parameters({"tiled_cases": args.cases, "sweep_workers_per_sm": args.sweep})
    sweep = sweep_points(parameters)
    status = 0
    if args.sanitize:
        status |= sanitize(sweep)
    if args.quick:
        status |= quick(list(parameters.tiled_cases), sweep)
    return status


if __name__ == "__main__":
    sys.exit(main())
