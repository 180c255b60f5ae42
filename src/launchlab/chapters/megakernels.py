"""Chapter 4, megakernels: the tiled path as three kernels, as one cooperative persistent kernel
with grid barriers, and as one persistent kernel fed by an atomic task queue.

Every variant runs the same A, B and C device functions (kernels/tiled.cuh) on the same
buffers; only the way the work reaches the SMs differs. GPU mode validates, times and traces
them and writes raw files; `summarize` derives everything the chapter shows from those files.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from launchlab.gpu import capture
from launchlab.model import dot
from launchlab.model import oracles
from launchlab.model import schedules
from launchlab.measure import stats
from launchlab.model import workloads
from launchlab.measure.protocol import FROZEN
from launchlab.chapters.common import fail_validation, provenance, read_jsonl, rms_tolerance

STEM = "megakernels"
TAG = "ch04"
DEFAULT_PARAMETERS = {
    "tiled_cases": "balanced,ragged",
    "fixture_seed": 2026,
    "workers_per_sm": 0,  # persistent blocks per SM; 0: as many as the occupancy API allows
}
VARIANTS = ("stream3", "graph3", "coop_stream", "coop_graph", "queue_stream", "queue_graph")
BASELINE = "graph3"
SCHEDULE = {"stream3": "three_kernel", "graph3": "three_kernel", "coop_stream": "cooperative",
            "coop_graph": "cooperative", "queue_stream": "queue", "queue_graph": "queue"}
GRAPH_OF = {"stream3": "graph3", "coop_stream": "coop_graph", "queue_stream": "queue_graph"}
VARIANT_LABELS = {
    "stream3": "3 kernels, stream", "graph3": "3 kernels, graph",
    "coop_stream": "cooperative, stream", "coop_graph": "cooperative, graph",
    "queue_stream": "task queue, stream", "queue_graph": "task queue, graph",
}
HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches for the three kernels; "
             "cuLaunchCooperativeKernel through CuPy (which queries the occupancy API on every call) for the "
             "cooperative kernel; cudaMemsetAsync of the queue counters then a launch for the queue; Graph.launch "
             "for every graph")


def _cases(text: str) -> list[str]:
    cases = [c.strip() for c in str(text).split(",") if c.strip()]
    for case in cases:
        workloads.tiled_row_lengths(case)  # names an unknown case
    if not cases:
        raise ValueError("no tiled cases given")
    return cases


# --------------------------------------------------------------------------- GPU side
def run_on_gpu(writer, parameters: dict) -> None:
    """Build, validate every variant, time, validate again, trace; write it all into the run."""
    from launchlab.gpu import build
    from launchlab.gpu import device
    from launchlab.gpu import persistent as megakernel
    from launchlab.measure import protocol
    from launchlab.gpu import probes
    from launchlab.model import timelines
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import STAGE_KERNELS, TiledPath

    cases = _cases(parameters["tiled_cases"])
    seed = int(parameters["fixture_seed"])
    workers_per_sm = int(parameters["workers_per_sm"])
    backend = CupyBackend()
    stream = backend.stream
    record = {"chapter": STEM, "run_id": writer.run_id, "parameters": parameters, "protocol": FROZEN.record(),
              "host_path": HOST_PATH, "device": device.identity(), "wait_limit_ns": megakernel.WAIT_LIMIT_NS,
              **provenance()}
    modules = {"tiled_softmax": build.load_module("tiled_softmax"), "megakernel": megakernel.load(),
               "tiled_softmax_traced": build.load_module("tiled_softmax", {"LAUNCHLAB_TRACE": None}),
               "megakernel_traced": megakernel.load(traced=True)}
    builds = {label: build.save_build(writer, label, built, STAGE_KERNELS if label.startswith("tiled") else megakernel.KERNELS)
              for label, built in modules.items()}
    record["local_memory_free"] = all(r["local_bytes"] == 0 for b in builds.values() for r in b["resources_loaded"].values())
    oracle_cache: dict = {}
    checks: list[dict] = []

    def fail(reason):
        fail_validation(writer, record, checks, reason, rms_tolerance())

    def check(case, variant, runner, invoke, index, phase):
        path, queue = runner["path"], runner.get("queue")
        key = (case, index)
        if key not in oracle_cache:
            values = workloads.packed_fixture(seed, index, path.lengths)
            oracle_cache[key] = (values, oracles.rms_softmax_packed(values, path.row_offsets))
        values, reference = oracle_cache[key]
        uses_queue = variant.startswith("queue")
        if uses_queue:
            queue.clear_error()
        y = path.compute(values, invoke)
        result = oracles.compare(y, reference, oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
        if uses_queue:
            try:
                queue.check_error()
                result["counters_match_model"] = queue.counters_match()
            except megakernel.MegakernelError as error:
                result.update({"error": str(error), "counters_match_model": False})
            result["passed"] = result["passed"] and result["counters_match_model"]
        result.update({"workload": f"{variant}.{case}", "fixture": index, "phase": phase,
                       "input_sha256": _sha(values), "output_sha256": _sha(y)})
        checks.append(result)
        return result["passed"]

    # ---- timed builds: one TiledPath per case, whose buffers every variant shares
    runners, setup, nodes, dots, persistent = {}, {}, {}, {}, {}
    for case in cases:
        path = TiledPath(modules["tiled_softmax"], workloads.tiled_row_lengths(case))
        coop = megakernel.CooperativePhases(modules["megakernel"], path, workers_per_sm)
        queue = megakernel.TaskQueue(modules["megakernel"], path, workers_per_sm)
        runner = {"path": path, "coop": coop, "queue": queue}
        runner["invokes"] = _capture_variants(runner, stream, case, setup, nodes, dots)
        runners[case] = runner
        persistent[case] = {kind: {"workers": r.workers, "blocks_per_sm": r.blocks_per_sm,
                                   "resident_blocks_per_sm": r.resident_per_sm, "co_resident_capacity": r.capacity}
                            for kind, r in (("cooperative", coop), ("queue", queue))}
    record["persistent"] = persistent
    record["three_kernel_resident_blocks_per_sm"] = {
        name: megakernel.resident_blocks_per_sm(modules["tiled_softmax"].kernel(name)) for name in STAGE_KERNELS}
    record["sm_count"] = megakernel.sm_count()

    for case in cases:
        for variant in VARIANTS:
            for index in range(workloads.FIXTURES_BEFORE_TIMING):
                check(case, variant, runners[case], runners[case]["invokes"][variant], index, "before")
    if not all(c["passed"] for c in checks):
        fail("validation before timing failed")

    variants = [protocol.Variant(f"{variant}.{case}", runners[case]["invokes"][variant])
                for case in cases for variant in VARIANTS]
    record["state_before"] = device.state()
    samples = protocol.measure(variants, backend)
    record["state_after"] = device.state()
    record["clocks_dropped"] = device.clocks_dropped(record["state_before"], record["state_after"])
    writer.write_jsonl("samples/timing.jsonl", samples)
    record["queue_after_timing"] = {}
    for case in cases:  # the error words are sticky: a worker that gave up during timing shows here
        queue = runners[case]["queue"]
        try:
            queue.check_error()
            record["queue_after_timing"][case] = {"error": None, "counters_match_model": queue.counters_match()}
        except megakernel.MegakernelError as error:
            record["queue_after_timing"][case] = {"error": str(error), "counters_match_model": False}
    if not all(v["counters_match_model"] for v in record["queue_after_timing"].values()):
        fail("the task queue reported an error or wrong counters after timing")

    for case in cases:
        for variant in VARIANTS:
            check(case, variant, runners[case], runners[case]["invokes"][variant], workloads.HELD_OUT_FIXTURE, "after")
    if not all(c["passed"] for c in checks):
        fail("validation after timing failed")

    # ---- instrumented builds, separate from timing: one record per task
    max_tiles = max(runner["path"].tiles for runner in runners.values())
    max_tasks = max(2 * r["path"].tiles + r["path"].rows for r in runners.values())
    stage_records = probes.attach_buffer(modules["tiled_softmax_traced"], 3, max_tiles)
    task_records = probes.attach_task_buffer(modules["megakernel_traced"], max_tasks)
    trace_index, trace_checks = {}, {}
    for case in cases:
        path = TiledPath(modules["tiled_softmax_traced"], workloads.tiled_row_lengths(case))
        coop = megakernel.CooperativePhases(modules["megakernel_traced"], path, workers_per_sm)
        queue = megakernel.TaskQueue(modules["megakernel_traced"], path, workers_per_sm)
        for traced, timed in ((coop, runners[case]["coop"]), (queue, runners[case]["queue"])):
            if traced.workers != timed.workers:
                raise RuntimeError(f"the traced {traced.schedule} kernel fits {traced.workers} workers, the timed one "
                                   f"{timed.workers}: its trace would not show the timed schedule")
        runner = {"path": path, "coop": coop, "queue": queue}
        runner["invokes"] = _capture_variants(runner, stream, case, {}, {}, {})
        graph = schedules.TaskGraph.from_lengths(path.lengths)
        for variant in VARIANTS:
            invoke = runner["invokes"][variant]
            if not check(case, variant, runner, invoke, 0, "traced build"):
                fail(f"validation of the traced build failed ({variant}.{case})")
            if SCHEDULE[variant] == "three_kernel":
                arrays = megakernel.trace_three_kernel(path, invoke, stage_records)
                workers = record["three_kernel_resident_blocks_per_sm"]["tile_producer"] * record["sm_count"]
            else:
                persistent_runner = coop if SCHEDULE[variant] == "cooperative" else queue
                arrays = megakernel.trace_persistent(persistent_runner, invoke, task_records)
                workers = persistent_runner.workers
            name = f"{variant}.{case}"
            trace_index[name] = {"schedule": SCHEDULE[variant], "workers": int(workers)}
            writer.write_arrays(f"traces/{name}.npz", tile_row=graph.tile_row, **arrays)
            trace_checks[name] = schedules.check_trace(schedules.Trace.from_arrays(arrays), graph, SCHEDULE[variant],
                                                       int(workers))
    writer.write_json("traces/index.json", trace_index)
    writer.write_json("traces/checks.json", trace_checks)
    if not all(c["passed"] for c in trace_checks.values()):
        fail("a trace broke a dependency or its schedule's rules (traces/checks.json)")

    for name, text in dots.items():
        writer.write_text(f"graphs/{name}.dot", text)
    writer.write_json("graphs/nodes.json", nodes)
    writer.write_json("graphs/setup.json", setup)
    record["state_end"] = device.state()
    record["validation"] = {"verdict": "passed", "checks": len(checks), "trace_checks": len(trace_checks),
                            "tolerance": rms_tolerance()}
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record)


def _capture_variants(runner, stream, case, setup, nodes, dots) -> dict:
    """The six invocations of a case: three on the stream, and each captured into a graph."""
    path, coop, queue = runner["path"], runner["coop"], runner["queue"]
    invokes = {"stream3": path.invoke, "coop_stream": coop.invoke, "queue_stream": queue.invoke}
    kernel_names = {"stream3": list(path.KERNELS), "coop_stream": list(coop.KERNELS), "queue_stream": list(queue.KERNELS)}
    launches = {"stream3": len(path.launches), "coop_stream": 1, "queue_stream": 1}
    for base, graph_variant in GRAPH_OF.items():
        captured, setup[f"{graph_variant}.{case}"] = capture.capture(invokes[base], stream)
        dot = captured.debug_dot_str()
        dots[f"{graph_variant}.{case}"] = dot
        nodes[f"{graph_variant}.{case}"] = {"stream_launches": launches[base], "kernel_names": kernel_names[base],
                                            **dot.parse_dot(dot)}
        invokes[graph_variant] = lambda g=captured: g.launch(stream)
    return invokes


def _sha(array) -> str:
    from launchlab.store.evidence import sha256_array
    return sha256_array(array)


# --------------------------------------------------------------------------- analysis (CPU)
def run_cases(record: dict) -> list[str]:
    return _cases(record["parameters"]["tiled_cases"])


def summarize(run_dir: Path) -> dict:
    """Every summary the chapter shows, recomputed from the run's raw files."""
    run_dir = Path(run_dir)
    record = json.loads((run_dir / "run.json").read_text())
    samples = read_jsonl(run_dir / "samples/timing.jsonl")
    cases = run_cases(record)
    timing = stats.summarize_variants(samples)
    over_baseline = {f"{variant}.{case}": stats.paired_ratio(samples, f"{BASELINE}.{case}", f"{variant}.{case}")
                     for case in cases for variant in VARIANTS if variant != BASELINE}
    trace_index = json.loads((run_dir / "traces/index.json").read_text())
    trace_summaries = {}
    for name, entry in sorted(trace_index.items()):
        trace, graph = schedules.load_trace(run_dir / "traces" / f"{name}.npz")
        trace_summaries[name] = schedules.trace_summary(trace, graph, entry["schedule"], entry["workers"])
    nodes = json.loads((run_dir / "graphs/nodes.json").read_text())
    node_summary = {name: {"counts": dot.node_counts(n, n["kernel_names"]), "edges": len(n["edges"]),
                           "stream_launches": n["stream_launches"]} for name, n in sorted(nodes.items())}
    return {"timing": timing, "over_graph3": over_baseline, "traces": trace_summaries, "nodes": node_summary,
            "setup": json.loads((run_dir / "graphs/setup.json").read_text())}


def headline(summaries: dict) -> dict:
    figures = {f"event_us.{name}": summary["event_us"]["median"] for name, summary in summaries["timing"].items()}
    for name, ratio in summaries["over_graph3"].items():
        variant, case = name.split(".", 1)
        figures[f"{variant}_over_graph3.{case}"] = ratio["median"]
    for name, trace in summaries["traces"].items():
        figures[f"b_before_last_a.{name}"] = trace["b_before_last_a"]
    return figures


# --------------------------------------------------------------------------- page
def _quantiles(summary: dict, digits: int = 1) -> str:
    return f"{summary['median']:.{digits}f} [{summary['p10']:.{digits}f}, {summary['p90']:.{digits}f}]"


def _interval(summary: dict, digits: int = 2) -> str:
    return f"{summary['median']:.{digits}f} [{summary['ci_low']:.{digits}f}, {summary['ci_high']:.{digits}f}]"


def timing_table(run):
    """Per case and variant: event interval per invocation in a batch, host enqueue and completion of one call
    (median [p10, p90], us)."""
    import pandas as pd

    rows = {}
    for case in run_cases(run.record):
        for variant in VARIANTS:
            s = run.summaries["timing"][f"{variant}.{case}"]
            rows[(case, VARIANT_LABELS[variant])] = {
                "event interval / call, batch": _quantiles(s["event_us"]),
                "host enqueue, 1 call": _quantiles(s["single_enqueue_us"]),
                "host completion, 1 call": _quantiles(s["single_complete_us"])}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant (us)"])


def ratio_table(run):
    """graph3's event interval over each variant's, within each round: median [95% bootstrap interval].
    Above 1: the variant is faster than the three kernels replayed as a graph."""
    import pandas as pd

    cases = run_cases(run.record)
    rows = {VARIANT_LABELS[v]: {case: _interval(run.summaries["over_graph3"][f"{v}.{case}"]) for case in cases}
            for v in VARIANTS if v != BASELINE}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("3 kernels (graph) / variant")


def _ordered(run, table: dict) -> list[tuple[str, str]]:
    """(case, variant) pairs present in `table` (keyed '<variant>.<case>'), by case, then in VARIANTS order."""
    return [(case, variant) for case in run_cases(run.record) for variant in VARIANTS if f"{variant}.{case}" in table]


def trace_table(run):
    """Per traced variant: the checks, B tasks started before the last A ended, span and the model's, and the
    handoffs: from the end of a task's last input to its start (median), and a queue task's wait for inputs."""
    import pandas as pd

    rows = {}
    for case, variant in _ordered(run, run.summaries["traces"]):
        t = run.summaries["traces"][f"{variant}.{case}"]
        rows[(case, VARIANT_LABELS[variant])] = {
            "checks": "passed" if t["passed"] else "FAILED: " + ", ".join(k for k, v in t["checks"].items() if not v),
            "B before last A": f"{t['b_before_last_a']} of {t['b_tasks']}",
            "span (us)": round(t["makespan_ns"] / 1e3, 1),
            "model span (us)": round(t["model"]["makespan_ns"] / 1e3, 1),
            "model: B before last A": t["model"]["b_before_last_a"],
            "A->B handoff (us)": round(t["handoff_ns.B"]["median"] / 1e3, 2),
            "B->C handoff (us)": round(t["handoff_ns.C"]["median"] / 1e3, 2),
            "B holds, waiting (us)": round(t["wait_ns.B"]["median"] / 1e3, 2),
            "workers used": t["workers_used"], "SMs used": t["sms_used"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant (traced build)"])


def node_table(run):
    import pandas as pd

    rows = {}
    for case, variant in _ordered(run, run.summaries["nodes"]):
        n = run.summaries["nodes"][f"{variant}.{case}"]
        rows[(case, VARIANT_LABELS[variant])] = {"kernel nodes": n["counts"]["kernel"], "other nodes": n["counts"]["other"],
                                                 "edges": n["edges"], "launches in the stream version": n["stream_launches"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "graph"])


def resources_table(run):
    """Per kernel: registers and shared memory (loaded binary), resident blocks per SM, blocks launched."""
    import pandas as pd

    rows = {}
    sm_count = run.record["sm_count"]
    first_case = run_cases(run.record)[0]
    for label in ("tiled_softmax", "megakernel"):
        build_record = json.loads((run.path / "builds" / label / "record.json").read_text())
        for kernel, resources in build_record["resources_loaded"].items():
            if kernel in run.record["three_kernel_resident_blocks_per_sm"]:
                per_sm = run.record["three_kernel_resident_blocks_per_sm"][kernel]
                launched = "one per tile" if kernel != "row_combiner" else "one per row"
            else:
                entry = run.record["persistent"][first_case]["cooperative" if kernel == "coop_phases" else "queue"]
                per_sm, launched = entry["resident_blocks_per_sm"], str(entry["workers"])
            rows[kernel] = {"registers / thread": resources["registers"], "static shared (B)": resources["shared_bytes"],
                            "local (B)": resources["local_bytes"], "resident blocks / SM": per_sm,
                            "co-resident blocks": per_sm * sm_count, "blocks launched": launched}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("kernel")


def timing_figure(run):
    """Event interval per invocation (median, p10-p90) for every variant, both cases side by side."""
    from launchlab.present import figures

    cases = run_cases(run.record)
    fig, axes = figures.figure(height=3.8)
    groups = {VARIANT_LABELS[v]: {case: run.summaries["timing"][f"{v}.{case}"]["event_us"] for case in cases}
              for v in VARIANTS}
    figures.quantile_dots(axes[0, 0], groups, {case: case for case in cases}, log=False)
    axes[0, 0].set_ylabel("event interval per invocation (us)")
    axes[0, 0].set_ylim(bottom=0)
    axes[0, 0].tick_params(axis="x", labelsize="small")
    axes[0, 0].set_title("Tiled softmax, 1,048,576 elements: time per invocation in a batch", fontsize="medium")
    fig.tight_layout()
    return fig


KIND_COLOURS = {"A": "#4c72b0", "B": "#c44e52", "C": "#55a868"}


def gantt_figure(run, case: str, variants=("graph3", "coop_graph", "queue_graph")):
    """Per-SM timelines of one case: a line per SM (the blocks resident on it stacked inside the
    line), every task a bar from its start to its end, coloured by kind; in grey, a queue worker
    holding a task whose inputs are not ready."""
    from launchlab.present import figures

    fig, axes = figures.figure(len(variants), 1, height=3.4, sharex=True)
    for ax, variant in zip(axes[:, 0], variants):
        name = f"{variant}.{case}"
        trace, graph = schedules.load_trace(run.path / "traces" / f"{name}.npz")
        kind = graph.kinds()[trace.task]
        y = _stacked_sm_rows(trace.sm, trace.worker)
        waiting = trace.start_ns > trace.taken_ns
        if SCHEDULE[variant] == "queue" and waiting.any():  # a worker holding a task whose inputs are not ready
            ax.hlines(y[waiting], trace.taken_ns[waiting] / 1e3, trace.start_ns[waiting] / 1e3, colors="#bbbbbb",
                      linewidth=0.6, label="waiting")
        for index, label in enumerate(schedules.KINDS):
            mine = kind == index
            ax.hlines(y[mine], trace.start_ns[mine] / 1e3, trace.end_ns[mine] / 1e3, colors=KIND_COLOURS[label],
                      linewidth=0.8, label=label)
        last_a = trace.end_ns[kind == 0].max() / 1e3
        ax.axvline(last_a, color="black", linewidth=0.6, linestyle="--")
        summary = run.summaries["traces"][name]
        ax.set_title(f"{VARIANT_LABELS[variant]}, {case}: {summary['b_before_last_a']} of {graph.rows} B tasks start "
                     f"before the last A ends (dashed)", fontsize="medium")
        ax.set_ylabel("SM (%smid)")
        ax.legend(fontsize="small", loc="upper right", ncols=4)
    axes[-1, 0].set_xlabel("time since the first task was taken (us)")
    fig.tight_layout()
    return fig


def _stacked_sm_rows(sm: np.ndarray, worker: np.ndarray) -> np.ndarray:
    """y = SM + (rank of the worker among the workers seen on that SM) / (their count + 1)."""
    y = sm.astype(np.float64).copy()
    for value in np.unique(sm):
        on_sm = sm == value
        workers = np.unique(worker[on_sm])
        rank = np.searchsorted(workers, worker[on_sm])
        y[on_sm] += rank / (workers.size + 1)
    return y


def _verdict(ratio: dict) -> str:
    """How a variant compares with graph3, from the bootstrap interval of graph3/variant."""
    if ratio["ci_low"] > 1:
        return "faster than"
    if ratio["ci_high"] < 1:
        return "slower than"
    return "not distinguishable from"


def _compare(value: float, other: float, tolerance: float = 0.05) -> str:
    """'longer than', 'shorter than' or 'about as long as' (within `tolerance` relative)."""
    if abs(value - other) <= tolerance * max(abs(value), abs(other)):
        return "about as long as"
    return "longer than" if value > other else "shorter than"


PERSISTENT = ("coop_stream", "coop_graph", "queue_stream", "queue_graph")


def pays_sentence(summaries: dict, cases) -> str:
    """Which persistent variants beat the three-kernel graph (bootstrap interval above 1), in words."""
    faster = [f"the {VARIANT_LABELS[v]} variant on the {case} case" for case in cases for v in PERSISTENT
              if _verdict(summaries["over_graph3"][f"{v}.{case}"]) == "faster than"]
    if not faster:
        where = "in either case" if len(cases) == 2 else "in any case measured"
        return (f"In this run no persistent kernel, launched from the stream or replayed as a graph, is faster than the "
                f"three kernels replayed as a graph, {where}.")
    return "In this run " + ", ".join(faster) + " beat the three kernels replayed as a graph."


def page_values(run) -> dict:
    """Formatted numbers and verdicts for the chapter's prose, all from the run's summaries and record."""
    s, record = run.summaries, run.record
    values = {"run_id": run.run_id, "device_name": record["device"]["name"], "sm_count": str(record["sm_count"]),
              "rounds": str(record["protocol"]["rounds"]), "batch": str(record["protocol"]["batch"]),
              "wait_limit_s": f"{record['wait_limit_ns'] / 1e9:g}"}
    first = run_cases(record)[0]
    for kind in ("cooperative", "queue"):
        entry = record["persistent"][first][kind]
        values[f"{kind}_workers"] = str(entry["workers"])
        values[f"{kind}_blocks_per_sm"] = str(entry["blocks_per_sm"])
    for name, summary in s["timing"].items():
        values[f"event_{name.replace('.', '_')}"] = f"{summary['event_us']['median']:.1f}"
        values[f"complete_{name.replace('.', '_')}"] = f"{summary['single_complete_us']['median']:.1f}"
    for name, ratio in s["over_graph3"].items():
        key = name.replace(".", "_")
        values[f"ratio_{key}"] = f"{ratio['median']:.2f}"
        values[f"ratio_{key}_ci"] = f"{ratio['ci_low']:.3f}–{ratio['ci_high']:.3f}"
        values[f"verdict_{key}"] = _verdict(ratio)
    for name, trace in s["traces"].items():
        key = name.replace(".", "_")
        values[f"bla_{key}"] = str(trace["b_before_last_a"])
        values[f"span_{key}"] = f"{trace['makespan_ns'] / 1e3:.1f}"
        values[f"model_span_{key}"] = f"{trace['model']['makespan_ns'] / 1e3:.1f}"
        values[f"model_bla_{key}"] = str(trace["model"]["b_before_last_a"])
        values[f"wait_b_{key}"] = f"{trace['wait_ns.B']['median'] / 1e3:.2f}"
        values[f"wait_c_{key}"] = f"{trace['wait_ns.C']['median'] / 1e3:.2f}"
        values[f"gap_ab_{key}"] = f"{trace['phase_gaps_ns'][0] / 1e3:.2f}"
        values[f"checks_{key}"] = "passed" if trace["passed"] else "failed"
        values[f"handoff_b_{key}"] = f"{trace['handoff_ns.B']['median'] / 1e3:.2f}"
        values[f"handoff_c_{key}"] = f"{trace['handoff_ns.C']['median'] / 1e3:.2f}"
        values[f"a_end_spread_{key}"] = f"{trace['a_end_spread_ns'] / 1e3:.2f}"
    for name, n in s["nodes"].items():
        key = name.replace(".", "_")
        values[f"nodes_{key}_kernel"] = str(n["counts"]["kernel"])
        values[f"nodes_{key}_other"] = str(n["counts"]["other"])
    cases = run_cases(record)
    for case in cases:
        event = {v: s["timing"][f"{v}.{case}"]["event_us"]["median"] for v in VARIANTS}
        saved_by_graph = event["stream3"] - event["graph3"]
        for variant in ("coop_stream", "queue_stream"):  # share of the graph's saving that one launch recovers
            share = (event["stream3"] - event[variant]) / saved_by_graph if saved_by_graph > 0 else float("nan")
            values[f"recovered_{variant}_{case}"] = f"{100 * share:.0f} %"
        coop, graph3 = s["traces"][f"coop_graph.{case}"], s["traces"][f"graph3.{case}"]
        values[f"barrier_vs_boundary_{case}"] = _compare(coop["phase_gaps_ns"][0], graph3["phase_gaps_ns"][0])
    queue_trace = s["traces"][f"queue_graph.{first}"]
    a_tasks = (queue_trace["tasks"] - queue_trace["b_tasks"]) // 2  # as many A tasks as C tasks
    values["a_tasks"] = str(a_tasks)
    values["a_wave_phrase"] = ("fit in a single wave of" if a_tasks <= record["persistent"][first]["queue"]["workers"]
                               else "need more than one wave of")
    values["pays_sentence"] = pays_sentence(s, cases)
    values["traces_passed"] = str(sum(t["passed"] for t in s["traces"].values()))
    values["traces_total"] = str(len(s["traces"]))
    values["validation_checks"] = str(record["validation"]["checks"])
    return values
