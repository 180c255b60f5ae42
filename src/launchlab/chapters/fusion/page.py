"""Chapter 3's tables, figures and glued values, all read from the run (its summaries and record).

Comparisons are device time per call: warm L2 from graphs of CALLS_PER_GRAPH captured calls, cold L2 from one
stream call after the flush and the GPU wait. Stream launches' warm batches appear only as the host-path view."""
from __future__ import annotations

import re

from launchlab.chapters.fusion import (CALLS_PER_GRAPH, CONTENDERS, COPY_RATIO_TARGET, CUDNN_SPEEDUP_TARGET, DEVICE,
                                       FEW_ROWS_REG_CHUNKS, L2_STATES, LIBRARIES, SWEEP_BYTES_PER_REPLAY, SWEEP_COPY_TARGETS,
                                       SWEEP_MAX_CALLS)
from launchlab.chapters.fusion.summary import SUBMISSION_PATHS, variant
from launchlab.measure.variant import VariantId
from launchlab.model import fused_policy, workloads

MAX_SERIES = 6
TARGET_LABELS = {"fused_rms_over_copy": "fused RMS time / copy time", "cudnn_over_fused_plain": "cuDNN time / fused plain time",
                 "torch_over_fused_plain": "torch time / fused plain time"}


def label(name: str) -> str:
    return CONTENDERS[name].label


def _table(rows, index, **kwargs):
    from launchlab.present import tables

    return tables.page_table(rows, index=index, **kwargs)


def _summaries(run) -> dict:
    return run.summaries


# ---------------------------------------------------------------- numbers shared by tables and prose
def shape_label(shape: str) -> str:
    """4096x128 -> 4096×128, as the prose writes a shape."""
    return shape.replace("x", "×")


def build_label(module: str) -> str:
    """fused_softmax_b256_r4_u4_m5 -> b256 r4 u4 m5 (block, register chunks, unroll, min blocks per SM);
    softmax_designs_narrow_block128_design1_lanes32_row_chunks1 -> narrow b128 l32 r1 (block, lanes, row chunks;
    a cluster's c<blocks> s<slice chunks in registers> u<unroll>)."""
    short = module.removeprefix("fused_softmax_").removeprefix("softmax_designs_")
    short = re.sub(r"_design\d", "", short)
    for word, letter in (("row_chunks", "r"), ("slice_regs", "s"), ("block", "b"), ("lanes", "l"), ("unroll", "u")):
        short = short.replace(word, letter)
    short = re.sub(r"_cluster(\d)", r"_c\1", short)
    return short.replace("_", "\u00a0")   # never broken inside a build


def ratio_decimals(ratio: dict) -> int:
    """2 decimals, or 3 where the 95 % interval would print as the median itself at 2 (so no number is compared
    with itself)."""
    low, high = ratio.get("ci_low"), ratio.get("ci_high")
    if low is None or high is None or f"{low:.2f}" != f"{high:.2f}":
        return 2
    return 3


def ratio_cell(ratio) -> str:
    """A table cell: median [95 % interval] with enough decimals that the interval shows."""
    from launchlab.present import tables

    if not ratio:
        return tables.MISSING
    if f"{ratio['ci_low']:.3f}" == f"{ratio['ci_high']:.3f}":   # the interval is narrower than 3 decimals show
        return f"{ratio['median']:.3f} [±0.0005]"
    return tables.median_with_band(ratio, tables.CI, digits=ratio_decimals(ratio))


def ratio_number(value: float) -> str:
    """A ratio at 2 decimals, or 3 where 2 would print a ratio off 1 as "1.00" (a side of 1 must show)."""
    return f"{value:.3f}" if f"{value:.2f}" == "1.00" and value != 1.0 else f"{value:.2f}"


def interval_text(ratio: dict) -> str:
    """The 95 % interval of a ratio for the prose: its ends, at the decimals that tell them apart (and each other
    from 1), or how narrow it is where even 3 decimals do not."""
    low, high = ratio["ci_low"], ratio["ci_high"]
    for places in (2, 3):
        ends = [f"{v:.{places}f}" for v in (low, high)]
        if ends[0] != ends[1] and (places == 3 or "1.00" not in ends or low == 1.0 or high == 1.0):
            return f"95 % interval {ends[0]}–{ends[1]}"
    return "95 % interval within ±0.0005"


# ---------------------------------------------------------------- build configurations and resources
DESIGN_LABELS = {"narrow": "narrow rows (part of a warp per row)", "row": "one block per row",
                 "cluster": "a cluster of blocks per row", "split": "split rows over a cooperative grid"}


def plan_place(plan: dict) -> str:
    """Where a design keeps a row, in words."""
    defines = plan.get("defines", {})
    if plan["design"] == "row":
        return plan["tier"]
    if plan["design"] == "narrow":
        return f"registers, {defines['LANES']} lanes"
    if plan["design"] == "cluster":
        where = "registers" if defines.get("SLICE_REGS") else "shared memory"
        return f"{where}, {defines['CLUSTER']} blocks"
    return "shared memory or streamed"


def plan_kernels(plan: dict) -> tuple[str, str]:
    """(RMS kernel, plain kernel) of a plan."""
    if plan["design"] == "row":
        return "fused_rms_softmax", "fused_softmax"
    return f"{plan['design']}_rms_softmax", f"{plan['design']}_softmax"


def config_table(run):
    """Which fused design and build serves which fixed shape: where a row lives, threads, shared memory, registers."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        plan = s["configs"][shape]
        resources = s["resources"].get(plan["module"], {})
        rms, plain = plan_kernels(plan)
        rows.append({"shape": shape_label(shape), "design": plan["design"], "row kept in": plan_place(plan),
                     "threads": plan.get("block") or plan["defines"]["BLOCK"],
                     "dynamic shared": plan["shared_bytes"] if plan["shared_bytes"] is not None else "per launch",
                     "registers, RMS": resources.get(rms, {}).get("registers"),
                     "registers, plain": resources.get(plain, {}).get("registers"),
                     "build": build_label(plan["module"])})
    return _table(rows, "shape", formats={"build": "text", "row kept in": "text", "design": "text",
                                          "dynamic shared": "text"},
                  units={"threads": "per block", "dynamic shared": "bytes", "registers, RMS": "per thread",
                         "registers, plain": "per thread"},
                  note="Build: the compile-time defines (row kernel: b<threads> r<register chunks> u<unroll> "
                       "m<min blocks per SM>; designs: b<threads> l<lanes> r<chunks per lane> c<cluster blocks> s<slice chunks in registers>). Shapes with equal defines share a build. The launch policy is declared "
                       "in the chapter's code before any run.")


def policy_table(run):
    """The launch policy over every shape of the run (fixed and swept): which design served which row lengths."""
    s = _summaries(run)
    by_design: dict = {}
    for series in ("4096", "128"):
        for point in s["sweep"].get(series, []):
            by_design.setdefault((point["design"], point["rows"]), []).append(point["cols"])
    for shape in s["shapes"]:
        rows_, cols = workloads.parse_shapes(shape)[0]
        by_design.setdefault((s["configs"][shape]["design"], rows_), []).append(cols)
    table = [{"design": DESIGN_LABELS[design], "rows": rows_, "shortest row": min(cols), "longest row": max(cols),
              "shapes in this run": len(set(cols))} for (design, rows_), cols in sorted(by_design.items(), key=lambda kv: (kv[0][1], min(kv[1])))]
    return _table(table, "design", formats={"design": "text"},
                  units={"rows": "count", "shortest row": "floats", "longest row": "floats", "shapes in this run": "count"},
                  note="Row lengths N in floats (4 bytes). The policy (model/fused_policy.design_for) was fixed before "
                       "the run from a development sweep.")


RESOURCE_COLUMNS = {"registers": ("Registers", "per thread"), "shared_bytes": ("Static shared", "bytes"),
                    "local_bytes": ("Local", "bytes"), "spill_bytes": ("Spills", "bytes"),
                    "stack_bytes": ("Stack", "bytes")}
KERNEL_LABELS = {"fused_rms_softmax": "fused RMS", "fused_softmax": "fused plain"}


def resource_table(run):
    """Registers, shared, local memory, spills (stores + loads) and stack per kernel; the full table as CSV."""
    rows = [{"build": build_label(build), "kernel": KERNEL_LABELS.get(kernel, kernel), **entry,
             "spill_bytes": entry.get("spill_stores", 0) + entry.get("spill_loads", 0)}
            for build, kernels in _summaries(run)["resources"].items() for kernel, entry in kernels.items()]
    rows = [{k: row.get(k) for k in ("build", "kernel", *RESOURCE_COLUMNS)} for row in rows]
    return _table(rows, ["build", "kernel"], formats={"build": "text", "kernel": "text"},
                  headers={k: f"{title} ({unit})" for k, (title, unit) in RESOURCE_COLUMNS.items()},
                  csv="fusion-resources",
                  note="From the loaded binaries and ptxas. Spills: spill stores plus spill loads; nonzero local "
                       "memory or spills would mean spilled registers.")


# ---------------------------------------------------------------- device time and bandwidth
def device_table(run):
    """Per shape and contender: device time per call warm and cold, logical GB/s, and % of the copy's GB/s."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        for name in s["contenders"]:
            times = s["device"].get(name, {}).get(shape)
            if not times:
                continue
            band = s["bandwidth"][name][shape]
            rows.append({"shape": shape_label(shape), "contender": label(name), "warm": times.get("warm"),
                         "cold": times.get("cold"), "warm_gbs": band.get("warm_gbs"), "cold_gbs": band.get("cold_gbs"),
                         "warm_pct": band.get("warm_pct_of_copy"), "cold_pct": band.get("cold_pct_of_copy")})
    return _table(rows, ["shape", "contender"], formats={"warm_pct": "pct", "cold_pct": "pct", "shape": "text"},
                  headers={"warm": "Warm (µs)", "cold": "Cold (µs)", "warm_gbs": "Warm (GB/s)",
                           "cold_gbs": "Cold (GB/s)", "warm_pct": "Warm (% of copy)", "cold_pct": "Cold (% of copy)"},
                  csv="fusion-device-time",
                  note=f"Device time per call and logical GB/s (logical bytes per call over device time). Warm: "
                       f"graphs of {CALLS_PER_GRAPH} captured calls, event time per replay divided by "
                       f"{CALLS_PER_GRAPH}. Cold: one stream call after the L2 flush and the GPU wait.")


def _long_ratio_rows(run, names, ratio_of) -> list[dict]:
    """One row per shape and contender: its paired ratio warm and cold for each (column, ratio name) of ratio_of."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        for name in names:
            row = {"shape": shape_label(shape), "contender": label(name)}
            for column, ratio_name in ratio_of(name):
                by_l2 = s["ratios"]["graph"].get(ratio_name, {}).get(shape, {})
                for l2 in L2_STATES:
                    row[f"{column}, {l2} (×)"] = by_l2.get(l2)
            if any(v for k, v in row.items() if k not in ("shape", "contender")):
                rows.append(row)
    return rows


def _ratio_formats(rows) -> dict:
    return {column: ratio_cell for column in (rows[0] if rows else {}) if column not in ("shape", "contender")}


def copy_ratio_table(run):
    """Device time over the copy's, paired per round: median [95 % interval]."""
    names = [n for n in _summaries(run)["contenders"] if n != "copy" and not CONTENDERS[n].library]
    rows = _long_ratio_rows(run, names, lambda n: [("over the copy", f"{n}_over_copy")])
    return _table(rows, ["shape", "contender"], formats={"shape": "text", **_ratio_formats(rows)},
                  note="Device time per call over the copy's in the same round; 1 is the copy, below 1 faster "
                       "than the copy. Brackets: 95 % bootstrap interval of the median over the rounds.")


def library_ratio_table(run):
    """Each library's device time over the fused plain kernel's and over the copy's, paired per round."""
    libraries = [n for n in _summaries(run)["contenders"] if CONTENDERS[n].library]
    rows = _long_ratio_rows(run, libraries, lambda n: [("over fused plain", f"{n}_over_fused_plain"),
                                                       ("over the copy", f"{n}_over_copy")])
    return _table(rows, ["shape", "contender"], formats={"shape": "text", **_ratio_formats(rows)},
                  headers={"contender": "Library"}, csv="fusion-library-ratios",
                  note="Library device time per call over the fused plain kernel's (above 1: the fused kernel was "
                       "faster) and over the copy's, paired within rounds. Brackets: 95 % bootstrap interval of the "
                       "median over the rounds.")


# ---------------------------------------------------------------- how the device time was obtained
def pacing_table(run):
    """Per graph32 variant: host enqueue per replay against event time per replay (device-paced when below)."""
    s = _summaries(run)
    rows = []
    ordered = [variant(n, shape, DEVICE) for shape in s["shapes"] for n in s["contenders"]]
    for name in (v for v in ordered if v in s["graph_pacing"]):
        vid, pacing = VariantId.parse(name), s["graph_pacing"][name]
        setup = s["graph_setup"].get(name, {})
        nodes = setup.get("nodes")
        rows.append({"shape": shape_label(vid.case), "contender": label(vid.target),
                     "host enqueue per replay (µs)": pacing["host_enqueue_us_per_replay"],
                     "event time per replay (µs)": pacing["event_us_per_replay"],
                     "largest enqueue / event (%)": 100 * pacing["host_share_max"],
                     "device-paced": pacing["device_paced"],
                     "nodes per call (count)": None if nodes is None else nodes / setup["calls"]})
    return _table(rows, ["shape", "contender"], formats={"largest enqueue / event (%)": "pct", "shape": "text"},
                  csv="fusion-graph-pacing",
                  note=f"A replay is {CALLS_PER_GRAPH} calls. Largest enqueue / event: the host's enqueue time of "
                       "a batch of replays as a share of the batch's event time, the largest over the rounds. "
                       "Device-paced: in every round the host enqueued the batch in less time than the GPU took "
                       "to run it.")


def host_table(run):
    """The host-path view: stream launches' warm batches beside the device time of the same contender."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        for name in s["contenders"]:
            host = s["host_view"].get(variant(name, shape, "stream"))
            if host is None:
                continue
            rows.append({"shape": shape_label(shape), "contender": label(name),
                         "stream, event per call (µs)": host["event_us"],
                         "stream, enqueue per call (µs)": host["enqueue_us"],
                         "host-bound": host["host_bound"],
                         "device time, warm (µs)": s["device"].get(name, {}).get(shape, {}).get("warm")})
    return _table(rows, ["shape", "contender"], formats={"shape": "text"}, csv="fusion-host-view",
                  note="Stream: a warm batch of calls launched one by one from Python, between CUDA events (host "
                       "view, not a GPU cost). Host-bound: the host's enqueue took at least nine tenths of the "
                       "batch's event time, so the batch measured the pace of submission.")


def submission_table(run):
    """A path's stream launch over its one-call graph replay (paired), and the graph's one-off setup cost."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        for name in SUBMISSION_PATHS:
            ratio = s["ratios"]["submission"].get(f"{name}_stream_over_graph", {}).get(shape)
            if ratio is None:
                continue
            setup = s["graph_setup"].get(variant(name, shape, "graph"), {})
            rows.append({"shape": shape_label(shape), "path": label(name),
                         "stream / graph, warm (×)": ratio.get("warm"), "stream / graph, cold (×)": ratio.get("cold"),
                         "set-up, capture to first replay (µs)": sum(setup.get(k, 0.0) for k in (
                             "capture_us", "end_capture_us", "instantiate_us", "upload_us", "first_replay_us"))})
    formats = {"shape": "text", "stream / graph, warm (×)": ratio_cell, "stream / graph, cold (×)": ratio_cell}
    return _table(rows, ["shape", "path"], formats=formats,
                  note="Stream launch over the replay of a one-call graph, paired within rounds. Brackets: 95 % "
                       "bootstrap interval of the median over the rounds. Set-up: one capture, measured once.")


# ---------------------------------------------------------------- bytes, targets, libraries
def dram_table(run):
    """Logical against measured DRAM bytes per contender at the profiled shape."""
    s = _summaries(run)
    rows = [{"shape": shape_label(shape), "contender": label(name), "logical (MB)": v["logical_bytes"] / 1e6,
             "DRAM read (MB)": v["read_bytes"] / 1e6, "DRAM written (MB)": v["write_bytes"] / 1e6,
             "measured / logical (×)": v["measured_over_logical"]}
            for shape, entry in s["dram"].items() for name, v in entry["contenders"].items()]
    if not rows:
        rows = [{"shape": shape, "why no counters": entry["error"] or "no counter values"}
                for shape, entry in s["dram"].items()] or [{"shape": "—", "why no counters": "no profile was taken"}]
        return _table(rows, "shape")
    return _table(rows, ["shape", "contender"], formats={"measured / logical (×)": "ratio", "shape": "text"},
                  note="One profiled call per kernel (Nsight Compute), caches flushed by the profiler; MB = 10⁶ bytes.")


def targets_table(run):
    rows = []
    for target in _summaries(run)["targets"]:
        measured = None if target["measured"] is None else {
            "median": target["measured"], "ci_low": target["ci_low"], "ci_high": target["ci_high"]}
        rows.append({"target": f"{TARGET_LABELS[target['ratio']]} {target['sense']} {target['threshold']}",
                     "shape": shape_label(target["shape"]), "L2": target["l2"], "measured (×)": measured,
                     "verdict": _verdict(target["met"])})
    return _table(rows, ["target", "shape", "L2"], formats={"measured (×)": ratio_cell, "shape": "text"},
                  csv="fusion-targets",
                  note="Measured: the paired device-time ratio of this run. Brackets: 95 % bootstrap interval of "
                       "the median over the rounds.")


def baseline_table(run):
    s = _summaries(run)
    rows = []
    for name, entry in s["baselines"].items():
        timed = [shape_label(shape) for shape in s["shapes"] if shape in s["device"].get(name, {})]
        setups = {shape: ", ".join(f"{k} {v}" for k, v in sorted(how.items()) if k != "library")
                  for shape, how in entry.get("setup", {}).items()}
        timed = ["all shapes"] if timed and len(timed) == len(s["shapes"]) else timed
        rows.append({"library": label(name), "timed at": ", ".join(timed) or "—",
                     "how": _reasons(setups, s["shapes"]),
                     "not timed": _reasons(entry["unavailable"], s["shapes"])})
    if not rows:
        rows = [{"library": "—", "timed at": "—", "how": "no library was requested", "not timed": "—"}]
    return _table(rows, "library")


def _reasons(by_shape: dict, shapes: list[str]) -> str:
    """{shape: text} as one entry per distinct text with the shapes it applies to ("all shapes" where all)."""
    by_reason = {}
    for shape in shapes:
        if shape in by_shape:
            by_reason.setdefault(by_shape[shape], []).append(shape_label(shape))
    return "; ".join(f"{'all shapes' if len(where) == len(shapes) else ', '.join(where)}: {why}"
                     for why, where in by_reason.items()) or "—"


def _verdict(met) -> str:
    return {True: "met", False: "missed", None: "not measured (library absent)"}[met]


# ---------------------------------------------------------------- figures
def _groups(run) -> list[tuple[str, list[str]]]:
    """(title, contenders) per figure row: our kernels, then the libraries beside the fused plain kernel; at most
    MAX_SERIES each, so every panel reads at a glance."""
    contenders = _summaries(run)["contenders"]
    ours = [n for n in contenders if n != "copy" and not CONTENDERS[n].library]
    ours.sort(key=lambda n: n != "fused_plain")   # fused plain first: the same colour in both rows
    libraries = [n for n in contenders if CONTENDERS[n].library]
    groups = [("this book's kernels", ours[:MAX_SERIES])]
    if libraries:
        plain = ["fused_plain"] if "fused_plain" in contenders else []
        groups.append(("libraries and fused plain", (plain + libraries)[:MAX_SERIES]))
    return groups


def _panel_sweeps(run, value_of, ylabel: str, ceiling_of, logy: bool):
    """A figure with one row per contender group and one column per L2 state; a legend right of each row."""
    from launchlab.present import figures

    s = _summaries(run)
    groups = _groups(run)
    fig, axes = figures.figure(len(groups), 2, height=2.9, layout="constrained", sharey="row")
    shapes = [shape_label(shape) for shape in s["shapes"]]
    for row, (title, names) in enumerate(groups):
        for column, l2 in enumerate(L2_STATES):
            ax = axes[row, column]
            series = {label(n): [value_of(n, shape, l2) for shape in s["shapes"]] for n in names}
            figures.sweep(ax, shapes, series, ceiling=ceiling_of(l2), ceiling_label="copy", logy=logy,
                          ylabel=ylabel if column == 0 else None)
            ax.set_title(f"{title}, {l2} L2", fontsize=figures.FONT_PT)
            ax.tick_params(axis="x", labelrotation=35)
            if logy:
                _plain_log_ticks(ax)
        figures.legend(axes[row, 1], "right")
    return fig


def ratio_figure(run):
    """Device time per call over the copy's, per shape: warm L2 left, cold right; 1 is the copy."""
    s = _summaries(run)

    def ratio(name, shape, l2):
        return s["ratios"]["graph"].get(f"{name}_over_copy", {}).get(shape, {}).get(l2)

    return _panel_sweeps(run, ratio, "device time / copy's", lambda l2: 1.0, logy=True)


def _plain_log_ticks(ax) -> None:
    """Ratios on a log axis read as 1, 1.5, 2, 3, not as powers of ten."""
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "125" else ""))


def bandwidth_figure(run):
    """Logical GB/s from device time per call, per shape, with the same run's copy as the ceiling."""
    s = _summaries(run)
    copy = s["bandwidth"].get("copy", {})

    def gbs(name, shape, l2):
        return s["bandwidth"].get(name, {}).get(shape, {}).get(f"{l2}_gbs")

    def ceiling(l2):
        return [copy.get(shape, {}).get(f"{l2}_gbs", float("nan")) for shape in s["shapes"]]

    return _panel_sweeps(run, gbs, "logical GB/s", ceiling, logy=False)


def bytes_figure(run):
    """Logical bytes against DRAM bytes measured by Nsight Compute, per contender."""
    import numpy as np

    from launchlab.present import figures

    s = _summaries(run)
    fig, axes = figures.figure(1, 1, height=3.0, layout="constrained")
    ax = axes[0, 0]
    entries = [(shape, name, v) for shape, e in s["dram"].items() for name, v in e["contenders"].items()]
    if not entries:
        errors = "; ".join(f"{shape}: {e['error']}" for shape, e in s["dram"].items()) or "no profile was taken"
        ax.text(0.5, 0.5, f"DRAM counters not read:\n{errors[:300]}", ha="center", va="center", wrap=True)
        ax.set_axis_off()
        return fig
    xs = np.arange(len(entries))
    read = np.array([v["read_bytes"] / 1e6 for _, _, v in entries])
    ax.bar(xs - 0.2, [v["logical_bytes"] / 1e6 for _, _, v in entries], 0.4, label="logical",
           color=figures.COLOURS[0])
    ax.bar(xs + 0.2, read, 0.4, label="DRAM read", color=figures.COLOURS[1])
    ax.bar(xs + 0.2, [v["write_bytes"] / 1e6 for _, _, v in entries], 0.4, bottom=read, label="DRAM written",
           color=figures.COLOURS[2])
    ax.set_xticks(xs, [f"{label(name)}\n{shape_label(shape)}" for shape, name, _ in entries])
    ax.set_ylabel("MB per call")
    ax.grid(axis="y", alpha=0.3)
    return figures.finish(fig, legend_where="right")


# ---------------------------------------------------------------- glued values
def _fmt(value, digits: int = 3) -> str:
    from launchlab.present.tables import fmt_sig

    return fmt_sig(value, digits)


def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record; every name the
    prose may use exists ("n/a" where this run did not measure it)."""
    s, record = _summaries(run), run.record
    protocol, device = record.protocol, record.device
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(device["sm_count"]),
              "l2_mib": f"{device['l2_bytes'] / 2**20:.0f}", "flush_mib": f"{2 * device['l2_bytes'] / 2**20:.0f}",
              "rounds": str(protocol["rounds"]), "batch": str(protocol["batch"]),
              "large_batch": str(protocol["large_batch"]), "warmups": str(protocol["warmups"]),
              "cold_repeats": str(protocol["cold_repeats"]), "cold_wait_us": f"{protocol['cold_wait_ns'] / 1e3:.0f}",
              "calls_per_graph": str(CALLS_PER_GRAPH), "graph_calls_per_batch": str(CALLS_PER_GRAPH * protocol["large_batch"]),
              "copy_ratio_target": f"{COPY_RATIO_TARGET}", "cudnn_speedup_target": f"{CUDNN_SPEEDUP_TARGET}",
              "checks": str(record.validation.get("checks", "n/a"))}
    values.update(_device_values(s))
    values.update(_ratio_values(s))
    values.update(_config_values(s))
    values.update(_target_sentences(s))
    values.update(_dram_values(s))
    values.update(_pacing_values(s))
    values.update(_library_values(s))
    values.update(finding_values(s))
    values.update(sweep_values(s))
    return _with_defaults(values, s)


def _device_values(s: dict) -> dict:
    values = {}
    for name, by_shape in s["device"].items():
        for shape, times in by_shape.items():
            for l2, summary in times.items():
                band = s["bandwidth"][name][shape]
                values[f"{name}_{shape}_{l2}_us"] = _fmt(summary["median"])
                values[f"{name}_{shape}_{l2}_gbs"] = f"{band[f'{l2}_gbs']:.0f}"
                if f"{l2}_pct_of_copy" in band:
                    values[f"{name}_{shape}_{l2}_pct"] = f"{band[f'{l2}_pct_of_copy']:.0f}"
    for vid, host in s["host_view"].items():
        parsed = VariantId.parse(vid)
        if parsed.submission == "stream":
            values[f"{parsed.target}_{parsed.case}_stream_us"] = _fmt(host["event_us"]["median"])
            values[f"{parsed.target}_{parsed.case}_stream_enqueue_us"] = _fmt(host["enqueue_us"]["median"])
    return values


def _ratio_values(s: dict) -> dict:
    values = {}
    for kind, prefix in (("graph", ""), ("stream", "stream_")):
        for ratio_name, by_shape in s["ratios"][kind].items():
            for shape, by_l2 in by_shape.items():
                for l2, ratio in by_l2.items():
                    values[f"{prefix}{ratio_name}_{shape}_{l2}"] = ratio_number(ratio["median"])
                    values[f"{prefix}{ratio_name}_{shape}_{l2}_ci"] = interval_text(ratio)
    return values


def _config_values(s: dict) -> dict:
    values = {}
    for shape, config in s["configs"].items():
        values[f"tier_{shape}"] = plan_place(config)
        values[f"design_{shape}"] = DESIGN_LABELS[config["design"]]
        values[f"block_{shape}"] = str(config.get("block") or config["defines"]["BLOCK"])
        values[f"module_{shape}"] = config["module"]
    values["fused_builds"] = str(len({c["module"] for c in s["configs"].values()}))
    values.update(byte_values(s))
    return values


def byte_values(s: dict) -> dict:
    """Bytes beside the kernel code, per shape: a row, what one thread and one block hold in registers (chunks of
    16 bytes), the dynamic shared memory, and the logical bytes of one call."""
    values = {}
    for shape, config in s["configs"].items():
        values[f"row_bytes_{shape}"] = f"{_columns(shape) * 4:,}"
        logical = s["bandwidth"].get("fused_rms", {}).get(shape, {}).get("logical_bytes_per_call")
        values[f"logical_mib_{shape}"] = "n/a" if logical is None else f"{logical / 2**20:g}"
        if config["design"] != "row":
            continue
        chunks, block = config.get("defines", {}).get("REG_CHUNKS", 0), config["block"]
        values[f"reg_chunks_{shape}"] = str(chunks)
        values[f"thread_reg_bytes_{shape}"] = str(16 * chunks)
        values[f"block_reg_bytes_{shape}"] = f"{16 * chunks * block:,}"
        values[f"shared_bytes_{shape}"] = f"{config['shared_bytes']:,}"
    return values


def _target_sentences(s: dict) -> dict:
    """Short computed verdicts for the prose (never typed by hand)."""
    values = {}
    for target in s["targets"]:
        values[f"verdict_{target['key'].replace('.', '_')}"] = _verdict(target["met"])
    copy_targets = [t for t in s["targets"] if t["ratio"] == "fused_rms_over_copy"]
    missed = [f"{shape_label(t['shape'])} {t['l2']} ({ratio_number(t['measured'])})" for t in copy_targets if t["met"] is False]
    measured = [t for t in copy_targets if t["met"] is not None]
    values["copy_target_summary"] = ("not measured" if not measured else f"met in all {len(measured)} cases" if not missed
                                     else f"missed in {len(missed)} of {len(measured)} cases: " + ", ".join(missed))
    for library in ("cudnn", "torch"):
        for l2 in L2_STATES:
            rows = [t for t in s["targets"] if t["ratio"] == f"{library}_over_fused_plain" and t["l2"] == l2
                    and t["sense"] == "above" and t["met"] is not None]
            lost = [f"{shape_label(t['shape'])} ({ratio_number(t['measured'])})" for t in rows if not t["met"]]
            values[f"{library}_{l2}_summary"] = ("not measured (library absent)" if not rows else
                                                 f"faster at all {len(rows)} shapes" if not lost else
                                                 f"not faster at {len(lost)} of {len(rows)} shapes: " + ", ".join(lost))
    return values


def _dram_values(s: dict) -> dict:
    values = {}
    for shape, entry in s["dram"].items():
        values[f"dram_{shape}_status"] = ("read by Nsight Compute" if entry["contenders"] else f"not read: {entry['error']}")
        for name, v in entry["contenders"].items():
            values[f"dram_{name}_{shape}_ratio"] = f"{v['measured_over_logical']:.2f}"
            values[f"dram_{name}_{shape}_mb"] = f"{(v['read_bytes'] + v['write_bytes']) / 1e6:.0f}"
    return values


def _pacing_values(s: dict) -> dict:
    pacing = s["graph_pacing"]
    paced = [v for v, p in pacing.items() if p["device_paced"]]
    host_paced = [f"{label(VariantId.parse(v).target)} at {VariantId.parse(v).case}"
                  for v, p in pacing.items() if not p["device_paced"]]
    largest = max((p["host_share_max"] for p in pacing.values()), default=None)
    bound = {}
    for shape in s["shapes"]:
        for name in s["contenders"]:
            if s["host_view"].get(variant(name, shape, "stream"), {}).get("host_bound"):
                bound.setdefault(label(name), []).append(shape_label(shape))
    bound = [f"{name} at {', '.join(shapes)}" for name, shapes in bound.items()]
    late = sum(p["host_enqueue_exceeded_wait"] for p in s["cold_pacing"].values())
    total = sum(p["samples"] for p in s["cold_pacing"].values())
    return {"graph_paced_summary": (f"all {len(pacing)} graph variants" if not host_paced else
                                    f"{len(paced)} of {len(pacing)} graph variants; host-paced: " + ", ".join(host_paced)),
            "graph_host_share_max": "n/a" if largest is None else f"{largest:.2f}",
            "host_bound_summary": "; ".join(bound) if bound else "none of the contenders at any shape",
            "cold_late": str(late), "cold_samples": str(total)}


NEAR_COPY = 1.10       # "near the copy": a fused kernel's device time at most this many times the copy's
LONG_ROW = 1024        # rows of at least this many columns are where a fused kernel should reach the copy


def _columns(shape: str) -> int:
    return int(shape.split("x")[1])


def _listing(items: list[str]) -> str:
    return "none" if not items else items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ratio(s: dict, name: str, shape: str, l2: str) -> dict | None:
    return s["ratios"]["graph"].get(name, {}).get(shape, {}).get(l2)


def near_copy_values(s: dict, name: str) -> dict:
    """Where a fused kernel came within NEAR_COPY of the copy at rows of LONG_ROW columns or more, and where not
    (with the measured ratio)."""
    near, far = [], []
    for shape in (sh for sh in s["shapes"] if _columns(sh) >= LONG_ROW):
        for l2 in L2_STATES:
            ratio = _ratio(s, f"{name}_over_copy", shape, l2)
            if ratio is not None:
                where = f"{shape_label(shape)} {l2} ({ratio_number(ratio['median'])})"
                (near if ratio["median"] <= NEAR_COPY else far).append(where)
    return {f"near_copy_{name}": _listing(near), f"far_from_copy_{name}": _listing(far)}


def below_copy_value(s: dict) -> str:
    """Contenders whose device time was below the copy's, with the whole 95 % interval below 1."""
    found = []
    for name in s["contenders"]:
        for shape in s["shapes"]:
            for l2 in L2_STATES:
                ratio = _ratio(s, f"{name}_over_copy", shape, l2)
                if ratio is not None and ratio["ci_high"] < 1.0:
                    found.append(f"{label(name)} at {shape_label(shape)} {l2} ({ratio_number(ratio['median'])}, "
                                 f"{interval_text(ratio)})")
    return _listing(found) if found else "no contender at any shape"


def library_faster_value(s: dict, library: str) -> str:
    """Shapes where a library's device time was below the fused plain kernel's (median ratio below 1)."""
    found = []
    for shape in s["shapes"]:
        faster = [f"{l2} {ratio_number(r['median'])}" for l2 in L2_STATES
                  if (r := _ratio(s, f"{library}_over_fused_plain", shape, l2)) is not None and r["median"] < 1.0]
        if faster:
            found.append(f"{shape_label(shape)} ({', '.join(faster)})")
    return _listing(found) if found else "at no shape"


def sooner_libraries_value(s: dict, shape: str) -> str:
    """Which libraries finished a shape sooner than the fused plain kernel (median ratio below 1, warm or
    cold) and which did not, with their ratios."""
    sooner, later = [], []
    for library in LIBRARIES:
        medians = {l2: r["median"] for l2 in L2_STATES
                   if (r := _ratio(s, f"{library}_over_fused_plain", shape, l2)) is not None}
        if medians:
            text = f"{label(library)} ({', '.join(f'{l2} {ratio_number(m)}' for l2, m in medians.items())})"
            (sooner if min(medians.values()) < 1.0 else later).append(text)
    parts = ([f"{_listing(sooner)} finished sooner than the fused plain kernel"] if sooner else []) + (
        [f"{_listing(later)} took longer"] if later else [])
    return "; ".join(parts) if parts else "no library ran at this shape"


def finding_values(s: dict) -> dict:
    """The run's findings, computed: near-copy shapes, contenders below the copy, where libraries beat fused plain."""
    values = {"near_copy_threshold": f"{NEAR_COPY:.2f}", "long_row": str(LONG_ROW),
              "below_copy_summary": below_copy_value(s)}
    for name in ("fused_plain", "fused_rms"):
        values.update(near_copy_values(s, name))
    for library in LIBRARIES:
        values[f"{library}_faster_summary"] = library_faster_value(s, library)
    values["sooner_libraries_4096x128"] = sooner_libraries_value(s, "4096x128")
    return values


def _library_values(s: dict) -> dict:
    timed = [label(n) for n in LIBRARIES if n in s["device"]]
    absent = [f"{label(n)} ({'; '.join(sorted(set(e['unavailable'].values())))})"
              for n, e in s["baselines"].items() if e["unavailable"]]
    return {"libraries_timed": ", ".join(timed) or "none",
            "libraries_absent": "; ".join(absent) if absent else "none: every requested library loaded and was timed"}


def _with_defaults(values: dict, s: dict) -> dict:
    """Every per-shape name the prose may use, "n/a" where this run has no value for it."""
    shapes = list(dict.fromkeys([*s["shapes"], *(workloads.shape_name(*x) for x in workloads.FUSION_SHAPES)]))
    names = list(CONTENDERS)
    ratio_names = [f"{a}_over_copy" for a in names if a != "copy"] + ["row4_over_fused_rms", "fused_plain_over_fused_rms"]
    ratio_names += [f"{lib}_over_fused_plain" for lib in LIBRARIES]
    for shape in shapes:
        for key in ("tier", "design", "block", "module", "row_bytes", "reg_chunks", "thread_reg_bytes", "block_reg_bytes",
                    "shared_bytes", "logical_mib"):
            values.setdefault(f"{key}_{shape}", "n/a")
        for name in names:
            for l2 in L2_STATES:
                for unit in ("us", "gbs", "pct"):
                    values.setdefault(f"{name}_{shape}_{l2}_{unit}", "n/a")
            for suffix in ("stream_us", "stream_enqueue_us"):
                values.setdefault(f"{name}_{shape}_{suffix}", "n/a")
            values.setdefault(f"dram_{name}_{shape}_ratio", "n/a")
            values.setdefault(f"dram_{name}_{shape}_mb", "n/a")
        for ratio_name in ratio_names:
            for l2 in L2_STATES:
                for prefix in ("", "stream_"):
                    values.setdefault(f"{prefix}{ratio_name}_{shape}_{l2}", "n/a")
                    values.setdefault(f"{prefix}{ratio_name}_{shape}_{l2}_ci", "n/a")
        values.setdefault(f"dram_{shape}_status", "not profiled in this run")
    return values



# ---------------------------------------------------------------- the sweep
SWEEP_SERIES = {"4096": "4096 rows", "128": "128 rows"}
SWEEP_NAMES = ("fused_plain", "fused_rms", "cudnn", "torch", "triton")


def sweep_figure(run, series: str):
    """Top: logical GB/s against the row length N, the same run's copy dashed; bottom: device time over the copy's.
    Left warm L2, right cold L2."""
    import numpy as np

    from launchlab.present import figures

    points = _summaries(run)["sweep"][series]
    fig, axes = figures.figure(2, 2, height=2.9, layout="constrained", sharex=True, sharey="row")
    xs = [p["cols"] for p in points]
    names = [n for n in SWEEP_NAMES if any(n in p["device_us"] for p in points)]
    for column, l2 in enumerate(L2_STATES):
        copy = [p["device_us"].get("copy", {}).get(l2) for p in points]
        gbs = {label(n): [p["gbs"].get(n, {}).get(l2) for p in points] for n in names}
        figures.sweep(axes[0, column], xs, gbs, ceiling=[p["gbs"].get("copy", {}).get(l2, np.nan) for p in points],
                      ceiling_label="copy", ylabel="logical GB/s" if column == 0 else None, band=False,
                      logx=series == "128")
        ratio = {label(n): [None if c is None or n not in p["device_us"] or l2 not in p["device_us"][n] else
                            p["device_us"][n][l2] / c for p, c in zip(points, copy)] for n in names}
        figures.sweep(axes[1, column], xs, ratio, ceiling=1.0, ceiling_label="copy", logy=True, band=False,
                      logx=series == "128", xlabel="row length N (floats)",
                      ylabel="device time / copy's" if column == 0 else None)
        _plain_log_ticks(axes[1, column])
        if series == "4096":
            axes[1, column].set_xticks([0, 4096, 8192, 12288], ["0", "4096", "8192", "12288"])
        axes[0, column].set_title(f"{SWEEP_SERIES[series]} × N, {l2} L2", fontsize=figures.FONT_PT)
    return figures.finish(fig, legend_where="right")


def rho_figure(run):
    """Fused RMS time over fused plain time at every sweep point (paired per round), warm and cold."""
    from launchlab.present import figures

    s = _summaries(run)
    fig, axes = figures.figure(1, 2, height=2.8, layout="constrained", sharey="row")
    for column, series in enumerate(("4096", "128")):
        points = s["sweep"][series]
        values = {f"{l2} L2": [p["ratios"].get("fused_rms_over_fused_plain", {}).get(l2) for p in points]
                  for l2 in L2_STATES}
        figures.sweep(axes[0, column], [p["cols"] for p in points], values, ceiling=1.0, ceiling_label="no cost",
                      logx=series == "128", xlabel="row length N (floats)",
                      ylabel="fused RMS / fused plain" if column == 0 else None)
        axes[0, column].set_title(f"{SWEEP_SERIES[series]} × N", fontsize=figures.FONT_PT)
    return figures.finish(fig, legend_where="right")


def sweep_targets_table(run):
    """The sweep's declared targets: the worst point of each, and the verdict."""
    s = _summaries(run)
    what = {"fused_plain": "fused plain time / copy time", "fused_rms": "fused RMS time / copy time"}
    where = {"max_n_ge_1024": "every point with N ≥ 1024", "max_n_lt_1024": "every point with N < 1024",
             "every_point": "every point"}
    rows = []
    for target in s["sweep"]["targets"]:
        library = target["kind"] not in what
        rows.append({"target": f"{label(target['kind'])} time / fused plain time" if library else what[target["kind"]],
                     "where": where[target["where"]], "L2": target["l2"],
                     "bound": ("above " if library else "at most ") + f"{target['threshold']:g}",
                     "worst measured": None if target["measured"] is None else ratio_number(target["measured"]),
                     "at": shape_label(target["shape"]) if target["shape"] else "—", "verdict": sweep_verdict(target, s)})
    return _table(rows, "target", formats={k: "text" for k in ("target", "where", "L2", "bound", "worst measured", "at", "verdict")},
                  units={"worst measured": "ratio"},
                  note="Worst: the largest ratio over the copy, or the smallest library speed-up, over the sweep's points "
                       "(the fixed shapes on the sweep's grids included); paired medians over the rounds.")


def sanitizer_table(run):
    """compute-sanitizer's tools over every fused design (a separate process, small irregular shapes)."""
    s = _summaries(run)
    rows = [{"tool": tool, "ran": "yes" if r["ran"] else "no", "errors": r["errors"], "checks in the child": r["child_checks"],
             "all checks passed": "yes" if r["child_passed"] else "no", "clean": "yes" if r["clean"] else "no"}
            for tool, r in sorted(s.get("sanitizer", {}).items())]
    if not rows:
        rows = [{"tool": "—", "ran": "no", "errors": None, "checks in the child": None, "all checks passed": "—", "clean": "—"}]
    return _table(rows, "tool", formats={k: "text" for k in ("tool", "ran", "all checks passed", "clean")},
                  units={"errors": "count", "checks in the child": "count"},
                  note=run.record.details.get("sanitizer", {}).get("problem", ""))


# Every extreme summary.sweep_extremes can give, so that the prose has a value where a run has none (no sweep, no
# point in a range, a library not timed): the largest fused ratio over the copy per row-length range, the smallest
# library speed-up, the price of rho.
SWEEP_COPY_RATIOS = ("fused_plain_over_copy", "fused_rms_over_copy")
SWEEP_EXTREME_KEYS = tuple(
    [f"{ratio}.{where}.{l2}" for l2 in L2_STATES for ratio in SWEEP_COPY_RATIOS for where in SWEEP_COPY_TARGETS]
    + [f"min_speedup.{library}.{l2}" for l2 in L2_STATES for library in LIBRARIES]
    + [f"price_of_rho.{which}.{l2}" for l2 in L2_STATES for which in ("min", "median", "max")])
SWEEP_RANGES = {"max_n_ge_1024": "N ≥ 1024", "max_n_lt_1024": "N < 1024"}


def sweep_values(s: dict) -> dict:
    """Glue names for the sweep: its declared constants, point counts, extremes (sweep_<ratio>_<which>_<l2> and
    ..._at, the shape; "n/a" and why where the run has none), target verdicts and compute-sanitizer's results."""
    values = {**sweep_constant_values(), **sweep_point_values(s), **sweep_extreme_values(s), **few_rows_values(s)}
    for target in s["sweep"].get("targets", []):
        values["sweep_verdict_" + target["key"].replace(".", "_")] = sweep_verdict(target, s)
    for tool in ("memcheck", "racecheck"):
        values[f"sanitizer_{tool}"] = "not run"
    for tool, r in s.get("sanitizer", {}).items():
        values[f"sanitizer_{tool}"] = ("clean" if r["clean"] else f"{r['errors']} errors") + f" over {r['child_checks']} checks"
    return values


def sweep_constant_values() -> dict:
    """The sweep's declared targets and graph sizes and the launch policy's bounds (the same in every run)."""
    return {"sweep_target_ge_1024": f"{SWEEP_COPY_TARGETS['max_n_ge_1024']:g}",
            "sweep_target_lt_1024": f"{SWEEP_COPY_TARGETS['max_n_lt_1024']:g}",
            "sweep_mib_per_replay": f"{SWEEP_BYTES_PER_REPLAY / 2**20:.0f}", "sweep_max_calls": str(SWEEP_MAX_CALLS),
            "narrow_max_floats": f"{4 * fused_policy.NARROW_MAX_CHUNKS:,}",
            "cluster_min_cols": f"{fused_policy.CLUSTER_MIN_COLS:,}", "max_cluster": str(fused_policy.MAX_CLUSTER),
            "few_rows_reg_chunks": str(FEW_ROWS_REG_CHUNKS), "few_rows_max_floats": f"{4 * FEW_ROWS_REG_CHUNKS * 1024:,}"}


def _sweep_points(s: dict) -> list[dict]:
    return [point for series in SWEEP_SERIES for point in s["sweep"].get(series, [])]


def sweep_point_values(s: dict) -> dict:
    counts = {series: len(s["sweep"].get(series, [])) for series in SWEEP_SERIES}
    return {"sweep_points": str(sum(counts.values())),
            **{f"sweep_points_{series}": str(count) for series, count in counts.items()}}


def few_rows_values(s: dict) -> dict:
    """The 128-row sweep points where the one-block-per-row kernel holds the row in registers: their row lengths,
    and the ranges of fused plain time over the copy's and of the Triton kernel's time over fused plain, warm L2
    ("n/a" where absent)."""
    points = [p for p in s["sweep"].get("128", [])
              if p["design"] == "row" and s["configs"].get(p["shape"], {}).get("tier") == "registers"]
    values = {"few_rows_lengths": f"{points[0]['cols']:,} to {points[-1]['cols']:,}" if points else "n/a"}
    for name, ratio in (("copy", "fused_plain_over_copy"), ("triton", "triton_over_fused_plain")):
        medians = [p["ratios"][ratio]["warm"]["median"] for p in points if "warm" in p["ratios"].get(ratio, {})]
        values[f"few_rows_{name}_range"] = (f"{ratio_number(min(medians))} to {ratio_number(max(medians))}"
                                            if medians else "n/a")
    return values


def sweep_extreme_values(s: dict) -> dict:
    """Every extreme of SWEEP_EXTREME_KEYS at 2 or 3 decimals with where it was; "n/a" with the reason in ..._at
    where the run has no figure for it (the prose reads "n/a (at no point: ...)")."""
    extremes, values = s["sweep"].get("extremes", {}), {}
    for key in dict.fromkeys([*SWEEP_EXTREME_KEYS, *extremes]):
        name, entry = "sweep_" + key.replace(".", "_"), extremes.get(key)
        if entry is None:
            values[name], values[f"{name}_at"] = "n/a", "no point: " + missing_extreme_reason(s, key)
            continue
        values[name] = ratio_number(entry["value"])
        values[f"{name}_at"] = shape_label(entry["shape"]) if entry.get("shape") else "over all points"
    return values


def missing_extreme_reason(s: dict, key: str) -> str:
    """Why the run has no figure for a sweep extreme: no sweep, a library not timed, or no point in the range."""
    kind, which, _ = key.split(".")
    if not _sweep_points(s):
        return "this run had no sweep"
    if kind == "min_speedup":
        return f"{label(which)} was not timed in the sweep"
    if which in SWEEP_RANGES:
        return f"the sweep had no point with {SWEEP_RANGES[which]}"
    return "no sweep point measured it"


def sweep_verdict(target: dict, s: dict) -> str:
    """A sweep target's verdict; one not measured says why: no sweep point, or (a library's) the library absent."""
    if target["met"] is None and (target["kind"] not in LIBRARIES or not _sweep_points(s)):
        return "not measured (no sweep point)"
    return _verdict(target["met"])
