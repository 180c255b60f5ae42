"""Chapter 1, ordinary launches: the four-kernel row path in one stream.

GPU mode (`run_on_gpu`) writes raw files into a new run; `summarize` derives every
figure the chapter shows from those files alone, on any machine.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from launchlab.model import oracles
from launchlab.measure import stats
from launchlab.gpu import probes
from launchlab.model import timelines
from launchlab.model import workloads
from launchlab.measure.protocol import FROZEN, round_orders
from launchlab.chapters.common import fail_validation, provenance, read_jsonl, rms_tolerance

STEM = "ordinary_launches"
TAG = "ch01"
ROW_KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")
DEFAULT_PARAMETERS = {
    "shapes": "4096x4096,4096x1024,128x8192",
    "fixture_seed": 2026,
    "launch_shape": "128x8192",  # the row path whose launches are timed from Python and C++
    "launch_repeats": FROZEN.batch,
}
LARGE_ELEMENTS = 1 << 24  # shapes this big use the protocol's smaller event batch
HOST_PATH = ("CuPy RawKernel launches from CPython on one non-blocking stream; the native loop "
             "calls cuLaunchKernel from C++ on the same stream, kernels and arguments")


def row_variant(shape: tuple[int, int]) -> str:
    return f"row4.{workloads.shape_name(*shape)}"


# --------------------------------------------------------------------------- GPU side
def run_on_gpu(writer, parameters: dict) -> None:
    """Build, validate, time, validate again, trace and time launches; write it all into the run."""
    from launchlab.gpu import build
    from launchlab.gpu import device
    from launchlab.gpu import native
    from launchlab.measure import protocol
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import RowPath

    shapes = workloads.parse_shapes(parameters["shapes"])
    launch_shape = workloads.parse_shapes(parameters["launch_shape"])[0]
    seed = int(parameters["fixture_seed"])
    backend = CupyBackend()
    record = {"chapter": STEM, "run_id": writer.run_id, "parameters": parameters, "protocol": FROZEN.record(),
              "host_path": HOST_PATH, "device": device.identity(), "state_before_build": device.state()}
    record.update(provenance())

    timed = build.load_module("row_softmax")
    traced = build.load_module("row_softmax", {"LAUNCHLAB_TRACE": None})
    empty = build.load_module("empty")
    builds = {"row_softmax": build.save_build(writer, "row_softmax", timed, ROW_KERNELS),
              "row_softmax_traced": build.save_build(writer, "row_softmax_traced", traced, ROW_KERNELS),
              "empty": build.save_build(writer, "empty", empty, ("empty_kernel",))}
    record["local_memory_free"] = all(r["local_bytes"] == 0 for b in builds.values()
                                      for r in b["resources_loaded"].values())

    paths = {shape: RowPath(timed, *shape) for shape in shapes}
    checks = [_validate(paths[s], s, seed, i, "before") for s in shapes for i in range(workloads.FIXTURES_BEFORE_TIMING)]
    if not all(c["passed"] for c in checks):
        fail_validation(writer, record, checks, "validation before timing failed", rms_tolerance())

    variants = [protocol.Variant(row_variant(s), paths[s].invoke, large=s[0] * s[1] >= LARGE_ELEMENTS) for s in shapes]
    record["state_before"] = device.state()
    samples = protocol.measure(variants, backend)
    record["state_after"] = device.state()
    record["clocks_dropped"] = device.clocks_dropped(record["state_before"], record["state_after"])
    writer.write_jsonl("samples/row_path.jsonl", samples)

    checks += [_validate(paths[s], s, seed, workloads.HELD_OUT_FIXTURE, "after") for s in shapes]
    if not all(c["passed"] for c in checks):
        fail_validation(writer, record, checks, "validation after timing failed", rms_tolerance())

    for shape in shapes:  # instrumented, separate from timing
        traced_path = RowPath(traced, *shape)
        records = probes.attach_buffer(traced, len(ROW_KERNELS), shape[0])
        checks.append(_validate(traced_path, shape, seed, 0, "traced build"))  # also warms the traced kernels
        writer.write_arrays(f"traces/{workloads.shape_name(*shape)}.npz",
                            **probes.collect(records, traced_path.invoke, len(ROW_KERNELS), shape[0]))
    if not all(c["passed"] for c in checks):
        fail_validation(writer, record, checks, "validation of the traced build failed", rms_tolerance())

    library, how = native.build_library()
    record["native_loop"] = {"built": library is not None, "how": how}
    writer.write_jsonl("samples/launch_cost.jsonl",
                       _launch_cost_samples(empty, paths.get(launch_shape) or RowPath(timed, *launch_shape),
                                            backend, library, int(parameters["launch_repeats"])))
    record["state_end"] = device.state()
    record["validation"] = {"verdict": "passed", "checks": len(checks), "tolerance": rms_tolerance()}
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record)


def _validate(path, shape, seed: int, index: int, phase: str) -> dict:
    from launchlab.store.evidence import sha256_array

    x = workloads.rms_softmax_fixture(seed, index, *shape)
    y = path.compute(x)
    result = oracles.compare(y, oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    result.update({"shape": workloads.shape_name(*shape), "fixture": index, "phase": phase,
                   "input_sha256": sha256_array(x), "output_sha256": sha256_array(y)})
    return result


def _launch_cost_samples(empty_module, row_path, backend, library, repeats: int) -> list[dict]:
    """Host cost per launch from CuPy and from the native loop, for the empty kernel and the row path.

    Each sample enqueues `repeats` invocations back to back: host enqueue time and
    host completion time of the whole batch, divided later by the launch count."""
    from launchlab.gpu.native import NativeLauncher

    empty_kernel = empty_module.kernel("empty_kernel")
    cases = {
        "cupy.empty": (lambda: empty_kernel((1,), (1,), ()), 1),
        "cupy.row4": (row_path.invoke, len(row_path.launches)),
    }
    if library is not None:
        launcher = NativeLauncher(library)
        packed = {"empty": launcher.prepare([(empty_kernel.kernel.ptr, 1, 1, ())]),
                  "row4": launcher.prepare(row_path.native_launches())}
        stream = backend.stream.ptr
        cases["native.empty"] = (packed["empty"], 1)
        cases["native.row4"] = (packed["row4"], len(row_path.launches))

    def batch(name):
        action, _ = cases[name]
        if name.startswith("native."):
            return launcher.run(action, stream, repeats)
        backend.synchronize()
        start = backend.host_ns()
        for _ in range(repeats):
            action()
        issued = backend.host_ns()
        backend.synchronize()
        return issued - start, backend.host_ns() - start

    for name in cases:  # warm-ups
        for _ in range(FROZEN.warmups):
            batch(name)
    samples = []
    for round_index, order in enumerate(round_orders(list(cases), FROZEN.rounds, FROZEN.host_seed)):
        for name in order:
            enqueue_ns, complete_ns = batch(name)
            samples.append({"round": round_index, "case": name, "repeats": repeats,
                            "launches_per_repeat": cases[name][1], "enqueue_ns": enqueue_ns, "complete_ns": complete_ns,
                            "shape": workloads.shape_name(row_path.rows, row_path.cols)})
    return samples


# --------------------------------------------------------------------------- analysis (CPU)
def summarize(run_dir: Path) -> dict:
    """Every summary the chapter shows, recomputed from the run's raw files."""
    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / "samples/row_path.jsonl")
    launch = read_jsonl(run_dir / "samples/launch_cost.jsonl")
    traced = {}
    for trace_file in sorted((run_dir / "traces").glob("*.npz")):
        with np.load(trace_file) as arrays:
            traced[trace_file.stem] = {
                "kernels": timelines.kernel_spans(arrays["start_ns"], arrays["end_ns"], ROW_KERNELS),
                "timer_step_ns": timelines.timer_resolution_ns(arrays["start_ns"], arrays["end_ns"]),
                "sms_used": int(np.unique(arrays["sm"]).size),
            }
    return {"row_path": stats.summarize_variants(samples), "launch_cost": summarize_launch_cost(launch),
            "timelines": traced}


def summarize_launch_cost(samples: list[dict]) -> dict:
    """Per case: host enqueue and completion time per launch (us), median and p10/p90."""
    grouped: dict[str, dict[str, list]] = {}
    for sample in samples:
        launches = sample["repeats"] * sample["launches_per_repeat"]
        entry = grouped.setdefault(sample["case"], {"enqueue_us_per_launch": [], "complete_us_per_launch": []})
        entry["enqueue_us_per_launch"].append(sample["enqueue_ns"] / 1e3 / launches)
        entry["complete_us_per_launch"].append(sample["complete_ns"] / 1e3 / launches)
    return {case: {metric: stats.quantiles(values) for metric, values in metrics.items()}
            for case, metrics in sorted(grouped.items())}


def headline(summaries: dict) -> dict:
    figures = {f"event_us.{variant}": summary["event_us"]["median"]
               for variant, summary in summaries["row_path"].items()}
    for case in ("cupy.empty", "native.empty"):
        if case in summaries["launch_cost"]:
            figures[f"launch_us.{case}"] = summaries["launch_cost"][case]["enqueue_us_per_launch"]["median"]
    return figures


# --------------------------------------------------------------------------- page
TIMING_COLUMNS = {
    "single_enqueue_us": "host enqueue, 1 call",
    "single_complete_us": "host completion, 1 call",
    "batch_enqueue_us": "host enqueue / call, batch",
    "batch_complete_us": "host completion / call, batch",
    "event_us": "event interval / call, batch",
}


def _cell(summary: dict) -> str:
    return f"{summary['median']:.2f} [{summary['p10']:.2f}, {summary['p90']:.2f}]"


def timing_table(run):
    """Per shape, the five per-invocation times (median [p10, p90], us), side by side."""
    import pandas as pd

    rows = {variant.removeprefix("row4."): {label: _cell(summary[metric]) for metric, label in TIMING_COLUMNS.items()}
            for variant, summary in run.summaries["row_path"].items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("shape (rows x cols)")


def launch_table(run):
    import pandas as pd

    rows = {case: {"host enqueue per launch (us)": _cell(s["enqueue_us_per_launch"]),
                   "host completion per launch (us)": _cell(s["complete_us_per_launch"])}
            for case, s in run.summaries["launch_cost"].items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("host path . kernels")


def gap_table(run):
    """Per traced shape and kernel: span of its blocks and the idle gap before it (us)."""
    import pandas as pd

    rows = []
    for shape, timeline in run.summaries["timelines"].items():
        for span in timeline["kernels"]:
            gap = span["gap_before_ns"]
            rows.append({"shape": shape, "kernel": span["kernel"], "span (us)": round(span["span_ns"] / 1e3, 2),
                         "gap before (us)": "" if gap is None else round(gap / 1e3, 2)})
    return pd.DataFrame(rows).set_index(["shape", "kernel"])


def timing_figure(run):
    from launchlab.present import figures

    fig, axes = figures.figure()
    groups = {v.removeprefix("row4."): s for v, s in run.summaries["row_path"].items()}
    figures.quantile_dots(axes[0, 0], groups, TIMING_COLUMNS)
    axes[0, 0].set_ylabel("microseconds per invocation")
    axes[0, 0].set_title("Row path, one stream: five clocks, never added", fontsize="medium")
    fig.tight_layout()
    return fig


def launch_figure(run):
    from launchlab.present import figures

    fig, axes = figures.figure()
    figures.quantile_dots(axes[0, 0], run.summaries["launch_cost"],
                          {"enqueue_us_per_launch": "host enqueue per launch",
                           "complete_us_per_launch": "host completion per launch"})
    axes[0, 0].set_ylabel("microseconds per launch")
    axes[0, 0].set_title("Host cost of one launch: CuPy against a native C++ loop", fontsize="medium")
    fig.tight_layout()
    return fig


def timeline_figure(run):
    from launchlab.present import figures

    shapes = list(run.summaries["timelines"])
    fig, axes = figures.figure(len(shapes), 1, height=3.0)
    for ax, shape in zip(axes[:, 0], shapes):
        with np.load(run.path / "traces" / f"{shape}.npz") as arrays:
            figures.block_timeline(ax, arrays["start_ns"], arrays["end_ns"], arrays["sm"], ROW_KERNELS,
                                   f"{shape}: every block of K1-K4 on its SM")
    fig.tight_layout()
    return fig


def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record."""
    s, record = run.summaries, run.record
    values = {"run_id": run.run_id, "device_name": record["device"]["name"],
              "sm_count": str(record["device"]["sm_count"]),
              "l2_mib": f"{record['device']['l2_bytes'] / 2**20:.0f}",
              "rounds": str(record["protocol"]["rounds"]), "batch": str(record["protocol"]["batch"]),
              "large_batch": str(record["protocol"]["large_batch"]), "warmups": str(record["protocol"]["warmups"])}
    for variant, summary in s["row_path"].items():
        key = variant.replace(".", "_")
        for metric in TIMING_COLUMNS:
            values[f"{key}_{metric}"] = f"{summary[metric]['median']:.1f}"
    for case, summary in s["launch_cost"].items():
        key = case.replace(".", "_")
        values[f"launch_{key}_enqueue"] = f"{summary['enqueue_us_per_launch']['median']:.2f}"
        values[f"launch_{key}_complete"] = f"{summary['complete_us_per_launch']['median']:.2f}"
    cost = s["launch_cost"]
    if "native.empty" in cost:
        ratio = cost["cupy.empty"]["enqueue_us_per_launch"]["median"] / cost["native.empty"]["enqueue_us_per_launch"]["median"]
        values["cupy_over_native_empty"] = f"{ratio:.1f}"
    for shape, timeline in s["timelines"].items():
        gaps = [k["gap_before_ns"] for k in timeline["kernels"][1:]]
        values[f"trace_{shape}_gaps_us"] = f"{sum(gaps) / 1e3:.1f}"
        values[f"trace_{shape}_total_us"] = f"{timeline['kernels'][-1]['last_end_ns'] / 1e3:.1f}"
        values[f"trace_{shape}_timer_step_ns"] = str(timeline["timer_step_ns"])
    return values

