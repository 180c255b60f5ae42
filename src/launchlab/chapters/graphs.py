"""Chapter 2, CUDA graphs: what replay removes and what it keeps.

The row path (four kernels) and the tiled path (three kernels) are captured once from
the very launches of their stream versions and replayed. GPU mode writes raw files;
`summarize` derives everything the chapter shows from them.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from launchlab.gpu import capture
from launchlab.model import dot
from launchlab.model import oracles
from launchlab.measure import stats
from launchlab.model import workloads
from launchlab.measure.protocol import FROZEN
from launchlab.chapters.common import fail_validation, provenance, read_jsonl, rms_tolerance

STEM = "graphs"
TAG = "ch02"
DEFAULT_PARAMETERS = {
    "row_shapes": "4096x4096,4096x1024,128x8192",
    "tiled_cases": "balanced,ragged",
    "fixture_seed": 2026,
    "empty_lengths": "1,4,16,64,256,1024",  # graphs of N empty kernels
    "row_copies": "1,4,16,64",              # graphs of k back-to-back row paths
    "copies_shape": "128x8192",
}
LARGE_ELEMENTS = 1 << 24
LARGE_LAUNCHES = 256  # invocations with this many launches use the protocol's smaller batch
DOT_MAX_NODES = 64    # larger graphs keep their node records, not their DOT text
HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches for the stream versions, "
             "Graph.launch for replays; the native loop calls cuLaunchKernel from C++")


def _ints(text: str) -> list[int]:
    values = [int(v) for v in str(text).split(",")]
    if any(v <= 0 for v in values):
        raise ValueError(f"{text!r}: counts must be positive")
    return values


# --------------------------------------------------------------------------- GPU side
def run_on_gpu(writer, parameters: dict) -> None:
    from launchlab.gpu import build
    from launchlab.gpu import device
    from launchlab.gpu import native
    from launchlab.measure import protocol
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import RowPath
    from launchlab.gpu.targets import STAGE_KERNELS, TiledPath
    from launchlab.chapters.ordinary_launches import ROW_KERNELS

    seed = int(parameters["fixture_seed"])
    backend = CupyBackend()
    stream = backend.stream
    record = {"chapter": STEM, "run_id": writer.run_id, "parameters": parameters, "protocol": FROZEN.record(),
              "host_path": HOST_PATH, "device": device.identity(), **provenance()}
    row_module, tiled_module, empty_module = (build.load_module(f) for f in ("row_softmax", "tiled_softmax", "empty"))
    build.save_build(writer, "row_softmax", row_module, ROW_KERNELS)
    build.save_build(writer, "tiled_softmax", tiled_module, STAGE_KERNELS)
    build.save_build(writer, "empty", empty_module, ("empty_kernel",))

    # Workloads: name -> (path, fixture maker, oracle)
    workloads_by_name = {}
    for shape in workloads.parse_shapes(parameters["row_shapes"]):
        workloads_by_name[f"row4.{workloads.shape_name(*shape)}"] = RowPath(row_module, *shape)
    for case in parameters["tiled_cases"].split(","):
        workloads_by_name[f"tiled3.{case}"] = TiledPath(tiled_module, workloads.tiled_row_lengths(case))

    captured, setup, nodes, dots = {}, {}, {}, {}
    for name, path in workloads_by_name.items():
        captured[name], setup[name] = capture.capture(path.invoke, stream)
        dots[name] = captured[name].debug_dot_str()
        nodes[name] = {"stream_launches": len(path.launches), "kernel_names": list(path.KERNELS),
                       **dot.parse_dot(dots[name])}

    def check(name, index, phase):
        path = workloads_by_name[name]
        results = []
        for how, invoke in (("stream", path.invoke), ("graph", lambda: captured[name].launch(stream))):
            results.append(_validate(path, name, seed, index, f"{phase}, {how}", invoke))
        return results

    checks = [c for name in workloads_by_name for i in range(workloads.FIXTURES_BEFORE_TIMING) for c in check(name, i, "before")]
    if not all(c["passed"] for c in checks):
        fail_validation(writer, record, checks, "validation before timing failed", rms_tolerance())

    variants = []
    for name, path in workloads_by_name.items():
        large = int(path.x.size) >= LARGE_ELEMENTS
        variants.append(protocol.Variant(f"stream.{name}", path.invoke, large))
        variants.append(protocol.Variant(f"graph.{name}", lambda g=captured[name]: g.launch(stream), large))

    # Graph length: N empty kernels, and k copies of the row path.
    empty_kernel = empty_module.kernel("empty_kernel")
    library, how = native.build_library()
    record["native_loop"] = {"built": library is not None, "how": how}
    launcher = native.NativeLauncher(library) if library else None
    packed_empty = launcher.prepare([(empty_kernel.kernel.ptr, 1, 1, ())]) if launcher else None
    for count in _ints(parameters["empty_lengths"]):
        def launch_empties(count=count):
            for _ in range(count):
                empty_kernel((1,), (1,), ())
        name = f"empty.{count}"
        graph, setup[name] = capture.capture(launch_empties, stream)
        captured[name] = graph
        dot = graph.debug_dot_str()
        nodes[name] = {"stream_launches": count, "kernel_names": ["empty_kernel"], **dot.parse_dot(dot)}
        if count <= DOT_MAX_NODES:
            dots[name] = dot
        large = count >= LARGE_LAUNCHES
        variants.append(protocol.Variant(f"stream.{name}", launch_empties, large))
        variants.append(protocol.Variant(f"graph.{name}", lambda g=graph: g.launch(stream), large))
        if launcher:
            variants.append(protocol.Variant(f"native.{name}", lambda c=count: launcher.enqueue(packed_empty, stream.ptr, c), large))
    copies_path = RowPath(row_module, *workloads.parse_shapes(parameters["copies_shape"])[0])
    for copies in _ints(parameters["row_copies"]):
        def launch_copies(copies=copies):
            for _ in range(copies):
                copies_path.invoke()
        name = f"row4x{copies}"
        graph, setup[name] = capture.capture(launch_copies, stream)
        captured[name] = graph
        dot = graph.debug_dot_str()
        nodes[name] = {"stream_launches": 4 * copies, "kernel_names": list(ROW_KERNELS), **dot.parse_dot(dot)}
        if 4 * copies <= DOT_MAX_NODES:
            dots[name] = dot
        variants.append(protocol.Variant(f"stream.{name}", launch_copies, 4 * copies >= LARGE_LAUNCHES))
        variants.append(protocol.Variant(f"graph.{name}", lambda g=graph: g.launch(stream), 4 * copies >= LARGE_LAUNCHES))

    record["state_before"] = device.state()
    samples = protocol.measure(variants, backend)
    record["state_after"] = device.state()
    record["clocks_dropped"] = device.clocks_dropped(record["state_before"], record["state_after"])
    writer.write_jsonl("samples/timing.jsonl", samples)

    checks += [c for name in workloads_by_name for c in check(name, workloads.HELD_OUT_FIXTURE, "after")]
    if not all(c["passed"] for c in checks):
        fail_validation(writer, record, checks, "validation after timing failed", rms_tolerance())
    for name, text in dots.items():
        writer.write_text(f"graphs/{name}.dot", text)
    writer.write_json("graphs/nodes.json", nodes)
    writer.write_json("graphs/setup.json", setup)
    record["validation"] = {"verdict": "passed", "checks": len(checks), "tolerance": rms_tolerance()}
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record)


def _validate(path, name: str, seed: int, index: int, phase: str, invoke) -> dict:
    from launchlab.store.evidence import sha256_array

    if name.startswith("row4."):
        x = workloads.rms_softmax_fixture(seed, index, path.rows, path.cols)
        y = path.compute(x, invoke)
        result = oracles.compare(y, oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE)
    else:
        x = workloads.packed_fixture(seed, index, path.lengths)
        y = path.compute(x, invoke)
        result = oracles.compare(y, oracles.rms_softmax_packed(x, path.row_offsets), oracles.RMS_SOFTMAX_TOLERANCE,
                                 path.row_offsets)
    result.update({"workload": name, "fixture": index, "phase": phase,
                   "input_sha256": sha256_array(x), "output_sha256": sha256_array(y)})
    return result


# --------------------------------------------------------------------------- analysis (CPU)
def summarize(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / "samples/timing.jsonl")
    timing = stats.summarize_variants(samples)
    setup = json.loads((run_dir / "graphs/setup.json").read_text())
    nodes = json.loads((run_dir / "graphs/nodes.json").read_text())
    names = sorted({v.split(".", 1)[1] for v in timing if v.startswith("graph.")})
    ratios = {name: {metric: stats.paired_ratio(samples, f"stream.{name}", f"graph.{name}", metric)
                     for metric in ("event_us", "single_complete_us")}
              for name in names if f"stream.{name}" in timing}
    node_summary = {name: {"counts": dot.node_counts(record, record["kernel_names"]),
                           "stream_launches": record["stream_launches"],
                           "edges": len(record["edges"])} for name, record in nodes.items()}
    return {"timing": timing, "stream_over_graph": ratios, "setup": {n: _setup_summary(setup[n], timing, n) for n in setup},
            "nodes": node_summary, "per_node": _per_node(timing, node_summary)}


def _setup_summary(setup: dict, timing: dict, name: str) -> dict:
    """Setup total and the replays after which the graph has paid for it (None: it never does)."""
    # math.fsum, not sum: Python 3.12 changed sum() of floats, and analyze must agree across hosts
    total = math.fsum(setup[k] for k in ("capture_us", "end_capture_us", "instantiate_us", "upload_us", "first_replay_us"))
    summary = {**setup, "total_us": total}
    for metric in ("event_us", "single_complete_us"):
        saving = timing[f"stream.{name}"][metric]["median"] - timing[f"graph.{name}"][metric]["median"]
        summary[f"saving_us.{metric}"] = saving
        summary[f"break_even_replays.{metric}"] = (total / saving) if saving > 0 else None
    return summary


def _per_node(timing: dict, nodes: dict) -> dict:
    """Per launch (stream, native) or per kernel node (graph): medians divided by the launch count."""
    result = {}
    for variant, summary in timing.items():
        how, name = variant.split(".", 1)
        if name.startswith("empty.") or name.startswith("row4x"):
            launches = nodes[name]["stream_launches"]
            result[variant] = {"launches": launches, **{metric: summary[metric]["median"] / launches
                                                        for metric in ("single_enqueue_us", "single_complete_us",
                                                                       "batch_enqueue_us", "event_us")}}
    return result


def headline(summaries: dict) -> dict:
    figures = {}
    longest = max((v for v in summaries["per_node"] if v.startswith("graph.empty.")), key=lambda v: int(v.rsplit(".", 1)[1]))
    figures["graph_node_us.empty"] = summaries["per_node"][longest]["event_us"]
    for name, ratio in summaries["stream_over_graph"].items():
        if name.startswith(("row4.", "tiled3.")):
            figures[f"stream_over_graph.{name}"] = ratio["event_us"]["median"]
    for family in ("row4", "tiled3"):
        counts = {n["counts"]["kernel"] for name, n in summaries["nodes"].items() if name.startswith(f"{family}.")}
        if len(counts) == 1:
            figures[f"kernel_nodes.{family}"] = counts.pop()
    return figures


# --------------------------------------------------------------------------- page
MAIN_PREFIXES = ("row4.", "tiled3.")


def _main(names):
    return [n for n in names if n.startswith(MAIN_PREFIXES)]


def _interval(summary: dict, digits: int = 2) -> str:
    return f"{summary['median']:.{digits}f} [{summary['ci_low']:.{digits}f}, {summary['ci_high']:.{digits}f}]"


def timing_table(run):
    """Stream and graph side by side: host enqueue and completion of one call, event interval per call (us)."""
    import pandas as pd

    rows = {}
    for name in _main(run.summaries["stream_over_graph"]):
        for how in ("stream", "graph"):
            s = run.summaries["timing"][f"{how}.{name}"]
            rows[(name, how)] = {"host enqueue, 1 call": f"{s['single_enqueue_us']['median']:.1f}",
                                 "host completion, 1 call": f"{s['single_complete_us']['median']:.1f}",
                                 "event interval / call, batch": f"{s['event_us']['median']:.1f}"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["workload", "submission"])


def ratio_table(run):
    """Stream time over graph time within each round: median [95% bootstrap interval]."""
    import pandas as pd

    rows = {name: {"event interval": _interval(r["event_us"]), "host completion, 1 call": _interval(r["single_complete_us"])}
            for name, r in run.summaries["stream_over_graph"].items() if name.startswith(MAIN_PREFIXES)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("stream / graph")


def setup_table(run):
    import pandas as pd

    columns = {"capture_us": "capture", "end_capture_us": "end capture", "instantiate_us": "instantiate",
               "upload_us": "upload", "first_replay_us": "first replay", "total_us": "total"}
    rows = {}
    for name in _main(run.summaries["setup"]):
        s = run.summaries["setup"][name]
        row = {label: round(s[key], 1) for key, label in columns.items()}
        for metric, label in (("event_us", "replays to pay back (event)"),
                              ("single_complete_us", "replays to pay back (host completion)")):
            value = s[f"break_even_replays.{metric}"]
            row[label] = "never" if value is None else f"{value:.0f}"
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("graph (us)")


def node_table(run):
    import pandas as pd

    rows = {name: {"kernel nodes": n["counts"]["kernel"], "other nodes": n["counts"]["other"],
                   "edges": n["edges"], "launches in the stream version": n["stream_launches"]}
            for name, n in run.summaries["nodes"].items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("graph")


PER_NODE_SERIES = {  # (variant prefix, metric) -> legend
    ("graph.empty.", "event_us"): "graph replay, event interval per node",
    ("graph.empty.", "single_enqueue_us"): "graph replay, host enqueue per node",
    ("stream.empty.", "event_us"): "Python stream launches, event interval per launch",
    ("native.empty.", "event_us"): "native C++ launches, event interval per launch",
    ("graph.row4x", "event_us"): "graph of k row paths, event interval per node",
    ("stream.row4x", "event_us"): "k row paths from Python, event interval per launch",
}


def per_node_figure(run):
    from launchlab.present import figures

    fig, axes = figures.figure(height=4.2)
    ax = axes[0, 0]
    per_node = run.summaries["per_node"]
    for index, ((prefix, metric), label) in enumerate(PER_NODE_SERIES.items()):
        points = sorted((v["launches"], v[metric]) for name, v in per_node.items() if name.startswith(prefix))
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", linestyle="--" if "row4x" in prefix else "-", label=label,
                    color=figures.KERNEL_COLOURS[index % len(figures.KERNEL_COLOURS)])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kernel launches per invocation (graph length)")
    ax.set_ylabel("microseconds per launch or node")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def graph_figure(run, names=("row4.128x8192", "tiled3.balanced")):
    """The captured graphs as CUDA printed them: one box per node, edges in dependency order."""
    from launchlab.present import figures

    fig, axes = figures.figure(1, len(names), height=3.2)
    for ax, name in zip(axes[0], names):
        parsed = dot.parse_dot((run.path / "graphs" / f"{name}.dot").read_text())
        figures.draw_chain(ax, [parsed["nodes"][n]["label"][-1] for n in dot.topological_order(parsed)],
                           f"{name}: {len(parsed['nodes'])} nodes, {len(parsed['edges'])} edges")
    fig.tight_layout()
    return fig


def page_values(run) -> dict:
    s, record = run.summaries, run.record
    values = {"run_id": run.run_id, "device_name": record["device"]["name"], "sm_count": str(record["device"]["sm_count"])}
    for name, ratio in s["stream_over_graph"].items():
        key = name.replace(".", "_")
        values[f"ratio_{key}_event"] = f"{ratio['event_us']['median']:.2f}"
        values[f"ratio_{key}_event_ci"] = f"{ratio['event_us']['ci_low']:.2f}–{ratio['event_us']['ci_high']:.2f}"
        values[f"ratio_{key}_complete"] = f"{ratio['single_complete_us']['median']:.2f}"
    for name, setup in s["setup"].items():
        key = name.replace(".", "_")
        values[f"setup_{key}_total"] = f"{setup['total_us']:.0f}"
        for metric in ("event_us", "single_complete_us"):
            value = setup[f"break_even_replays.{metric}"]
            values[f"breakeven_{key}_{metric}"] = "never" if value is None else f"{value:.0f}"
    for name, entry in s["per_node"].items():
        key = name.replace(".", "_")
        values[f"pernode_{key}_event"] = f"{entry['event_us']:.2f}"
        values[f"pernode_{key}_enqueue"] = f"{entry['single_enqueue_us']:.3f}"
    for name, n in s["nodes"].items():
        values[f"nodes_{name.replace('.', '_')}_kernel"] = str(n["counts"]["kernel"])
    head = run.headline
    values["graph_node_us_empty"] = f"{head['graph_node_us.empty']:.2f}"
    return values
