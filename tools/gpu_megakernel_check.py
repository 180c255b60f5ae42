"""Device checks for chapter 4 (megakernels), for a development run on a GPU host.

    python3 tools/gpu_megakernel_check.py --quick              # every variant: oracle, a quick time, a trace
    compute-sanitizer --tool memcheck python3 tools/gpu_megakernel_check.py --sanitize
                                                               # every variant once on small irregular rows

The chapter itself runs with `python -m launchlab execute megakernels --archive DIR`.

--quick is development evidence only (it never enters a run): each variant is validated on fixture 0,
then timed as REPEATS batches of BATCH back-to-back invocations between two events (median per
invocation), then its traced build is validated and traced once.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

BATCH = 200
REPEATS = 5
SANITIZE_ROWS = [1, 1023, 1025, 5000, 3, 2048, 4096]


def event_us(invoke, stream) -> float:
    import cupy

    times = []
    for _ in range(REPEATS):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        stream.synchronize()
        start.record(stream)
        for _ in range(BATCH):
            invoke()
        end.record(stream)
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / BATCH)
    return sorted(times)[len(times) // 2]


def runners(modules, lengths, stream, traced: bool):
    from launchlab.gpu import persistent as megakernel
    from launchlab.chapters import megakernels as chapter
    from launchlab.gpu.targets import TiledPath

    suffix = "_traced" if traced else ""
    path = TiledPath(modules["tiled_softmax" + suffix], lengths)
    runner = {"path": path, "coop": megakernel.CooperativePhases(modules["megakernel" + suffix], path),
              "queue": megakernel.TaskQueue(modules["megakernel" + suffix], path)}
    nodes = {}
    runner["invokes"] = chapter._capture_variants(runner, stream, "dev", {}, nodes, {})
    runner["nodes"] = nodes
    return runner


def validate(runner, values, invoke, uses_queue: bool) -> dict:
    from launchlab.model import oracles

    path = runner["path"]
    if uses_queue:
        runner["queue"].clear_error()
    result = oracles.compare(path.compute(values, invoke), oracles.rms_softmax_packed(values, path.row_offsets),
                             oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    if uses_queue:
        runner["queue"].check_error()
        result["counters_match_model"] = runner["queue"].counters_match()
        result["passed"] = result["passed"] and result["counters_match_model"]
    return result


def load_modules():
    from launchlab.gpu import build
    from launchlab.gpu import persistent as megakernel

    return {"tiled_softmax": build.load_module("tiled_softmax"), "megakernel": megakernel.load(),
            "tiled_softmax_traced": build.load_module("tiled_softmax", {"LAUNCHLAB_TRACE": None}),
            "megakernel_traced": megakernel.load(traced=True)}


def quick(cases) -> int:
    from launchlab.gpu import capture
    from launchlab.model import dot
    from launchlab.gpu import persistent as megakernel
    from launchlab.model import schedules
    from launchlab.gpu import probes
    from launchlab.model import timelines
    from launchlab.model import workloads
    from launchlab.chapters import megakernels as chapter
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import STAGE_KERNELS

    stream = CupyBackend().stream
    modules = load_modules()
    for label, built in modules.items():
        names = STAGE_KERNELS if label.startswith("tiled") else megakernel.KERNELS
        print(label, json.dumps(built.resources(names)))
    status = 0
    rows = []
    slots = megakernel.resident_blocks_per_sm(modules["tiled_softmax"].kernel("tile_producer")) * megakernel.sm_count()
    stage_records = probes.attach_buffer(modules["tiled_softmax_traced"], 3, 1024)
    task_records = probes.attach_task_buffer(modules["megakernel_traced"], 2 * 1024 + 128)
    for case in cases:
        lengths = workloads.tiled_row_lengths(case)
        graph = schedules.TaskGraph.from_lengths(lengths)
        values = workloads.packed_fixture(2026, 0, lengths)
        timed = runners(modules, lengths, stream, traced=False)
        traced = runners(modules, lengths, stream, traced=True)
        print(case, "persistent workers: coop", timed["coop"].workers, "queue", timed["queue"].workers,
              "resident/SM", timed["coop"].resident_per_sm, timed["queue"].resident_per_sm,
              "nodes", {k: dot.node_counts(n, n["kernel_names"]) for k, n in timed["nodes"].items()})
        for variant in chapter.VARIANTS:
            uses_queue = variant.startswith("queue")
            row = {"case": case, "variant": variant}
            try:
                result = validate(timed, values, timed["invokes"][variant], uses_queue)
                row["oracle"] = "ok" if result["passed"] else "FAILED"
                row["us"] = event_us(timed["invokes"][variant], stream) if result["passed"] else float("nan")
                result = validate(traced, values, traced["invokes"][variant], uses_queue)
                row["traced_oracle"] = "ok" if result["passed"] else "FAILED"
                schedule = chapter.SCHEDULE[variant]
                if schedule == "three_kernel":
                    arrays = megakernel.trace_three_kernel(traced["path"], traced["invokes"][variant], stage_records)
                    workers = slots
                else:
                    persistent = traced["coop"] if schedule == "cooperative" else traced["queue"]
                    arrays = megakernel.trace_persistent(persistent, traced["invokes"][variant], task_records)
                    workers = persistent.workers
                summary = schedules.trace_summary(schedules.Trace.from_arrays(arrays), graph, schedule, workers)
                row.update({"checks": "ok" if summary["passed"] else "FAILED " + json.dumps(summary["checks"]),
                            "b<lastA": summary["b_before_last_a"], "span_us": summary["makespan_ns"] / 1e3,
                            "model_us": summary["model"]["makespan_ns"] / 1e3,
                            "waitB_us": summary["wait_ns.B"]["median"] / 1e3, "gapAB_us": summary["phase_gaps_ns"][0] / 1e3,
                            "workers": workers})
                if not summary["passed"] or row["oracle"] != "ok" or row["traced_oracle"] != "ok":
                    status = 1
            except Exception as error:  # report and go on: one device call must show everything
                row["error"] = f"{type(error).__name__}: {error}"
                status = 1
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"{'case':>9} {'variant':>13} {'oracle':>6} {'us':>8} {'b<lastA':>7} {'span us':>8} {'model':>8} {'waitB':>7} {'gapAB':>7}")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:>9} {r['variant']:>13} ERROR {r['error'][:200]}")
            continue
        print(f"{r['case']:>9} {r['variant']:>13} {r['oracle']:>6} {r.get('us', float('nan')):8.2f} {r.get('b<lastA', -1):7d} "
              f"{r.get('span_us', 0):8.1f} {r.get('model_us', 0):8.1f} {r.get('waitB_us', 0):7.2f} {r.get('gapAB_us', 0):7.2f} "
              f"{r.get('checks', '')[:60]}")
    return status


def sanitize() -> int:
    """Every variant once (and the traced builds) on small irregular rows: for compute-sanitizer."""
    from launchlab.model import schedules
    from launchlab.gpu import probes
    from launchlab.model import timelines
    from launchlab.model import workloads
    from launchlab.chapters import megakernels as chapter
    from launchlab.gpu.backend import CupyBackend

    stream = CupyBackend().stream
    modules = load_modules()
    graph = schedules.TaskGraph.from_lengths(SANITIZE_ROWS)
    stage_records = probes.attach_buffer(modules["tiled_softmax_traced"], 3, graph.tiles)
    task_records = probes.attach_task_buffer(modules["megakernel_traced"], graph.total)
    values = workloads.packed_fixture(99, 0, SANITIZE_ROWS)
    status = 0
    for traced in (False, True):
        runner = runners(modules, SANITIZE_ROWS, stream, traced)
        for variant in chapter.VARIANTS:
            result = validate(runner, values, runner["invokes"][variant], variant.startswith("queue"))
            status |= not result["passed"]
            print("sanitize", "traced" if traced else "timed", variant, "ok" if result["passed"] else "FAILED", flush=True)
    del stage_records, task_records
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", default="balanced,ragged")
    parser.add_argument("--sanitize", action="store_true")
    args = parser.parse_args()
    status = 0
    if args.sanitize:
        status |= sanitize()
    if args.quick:
        status |= quick(args.cases.split(","))
    return status


if __name__ == "__main__":
    sys.exit(main())
