"""Chapter 3's tables, figures and glued values, all read from the run (its summaries and record).

Comparisons are device time per call: warm L2 from graphs of CALLS_PER_GRAPH captured calls, cold L2 from one
stream call after the flush and the GPU wait. Stream launches' warm batches appear only as the host-path view."""
from __future__ import annotations

from launchlab.chapters.fusion import (CALLS_PER_GRAPH, CONTENDERS, COPY_RATIO_TARGET, CUDNN_SPEEDUP_TARGET, DEVICE,
                                       L2_STATES, LIBRARIES)
from launchlab.chapters.fusion.summary import SUBMISSION_PATHS, variant
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

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


# ---------------------------------------------------------------- build configurations and resources
def config_table(run):
    """Which fused build serves which shape: where a row lives, threads per block, shared memory, registers."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        config = s["configs"][shape]
        resources = s["resources"].get(config["module"], {})
        rows.append({"shape": shape, "row lives in": config["tier"], "threads per block": config["block"],
                     "dynamic shared memory (bytes)": config["shared_bytes"],
                     "registers per thread (RMS / plain)": f"{resources.get('fused_rms_softmax', {}).get('registers', '—')} / "
                                                           f"{resources.get('fused_softmax', {}).get('registers', '—')}",
                     "build (module)": config["module"]})
    return _table(rows, "shape", note="One build per distinct set of compile-time defines; shapes with equal "
                                      "defines share it. The policy is declared in the chapter before any run.")


def resource_table(run):
    rows = [{"build": build, "kernel": kernel, **entry}
            for build, kernels in _summaries(run)["resources"].items() for kernel, entry in kernels.items()]
    return _table(rows, ["build", "kernel"], headers={"registers": "Registers per thread",
                                                      "shared_bytes": "Static shared (bytes)",
                                                      "local_bytes": "Local memory (bytes)",
                                                      "spill_stores": "Spill stores (bytes)",
                                                      "spill_loads": "Spill loads (bytes)",
                                                      "stack_bytes": "Stack frame (bytes)"},
                  note="From the loaded binaries and ptxas; nonzero local memory or spills would mean spilled registers.")


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
            rows.append({"shape": shape, "contender": label(name), "warm": times.get("warm"), "cold": times.get("cold"),
                         "warm_gbs": band.get("warm_gbs"), "cold_gbs": band.get("cold_gbs"),
                         "warm_pct": band.get("warm_pct_of_copy"), "cold_pct": band.get("cold_pct_of_copy")})
    return _table(rows, ["shape", "contender"], formats={"warm_pct": "pct", "cold_pct": "pct"},
                  headers={"warm": "Warm L2, per call (µs)", "cold": "Cold L2, per call (µs)",
                           "warm_gbs": "Warm (logical GB/s)", "cold_gbs": "Cold (logical GB/s)",
                           "warm_pct": "Warm, % of the copy's GB/s", "cold_pct": "Cold, % of the copy's GB/s"},
                  note=f"Warm: graphs of {CALLS_PER_GRAPH} captured calls, event time per replay divided by "
                       f"{CALLS_PER_GRAPH}. Cold: one stream call after the L2 flush and the GPU wait.")


def _ratio_rows(run, pairs) -> list[dict]:
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        row = {"shape": shape}
        for ratio_name, heading in pairs:
            by_l2 = s["ratios"]["graph"].get(ratio_name, {}).get(shape, {})
            for l2 in L2_STATES:
                row[f"{heading}, {l2}"] = by_l2.get(l2)
        rows.append(row)
    return rows


def copy_ratio_table(run):
    """Device time over the copy's, paired per round: median [95 % interval]."""
    names = [n for n in _summaries(run)["contenders"] if n != "copy" and not CONTENDERS[n].library]
    return _table(_ratio_rows(run, [(f"{n}_over_copy", f"{label(n)} / copy") for n in names]), "shape",
                  note="Device time per call over the copy's in the same round; 1 is the copy.")


def library_ratio_table(run):
    """Each library's device time over the fused plain kernel's, paired per round: median [95 % interval]."""
    libraries = [n for n in _summaries(run)["contenders"] if CONTENDERS[n].library]
    pairs = [(f"{n}_over_fused_plain", f"{label(n)} / fused plain") for n in libraries]
    pairs += [(f"{n}_over_copy", f"{label(n)} / copy") for n in libraries]
    return _table(_ratio_rows(run, pairs), "shape",
                  note="Above 1 in the first columns: the library took longer than the fused plain kernel.")


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
        rows.append({"shape": vid.case, "contender": label(vid.target),
                     "host enqueue per replay (µs)": pacing["host_enqueue_us_per_replay"],
                     "event time per replay (µs)": pacing["event_us_per_replay"],
                     "largest enqueue / event in a round": pacing["host_share_max"],
                     "device-paced": pacing["device_paced"],
                     "graph nodes per call": None if nodes is None else nodes / setup["calls"]})
    return _table(rows, ["shape", "contender"], formats={"largest enqueue / event in a round": "ratio"},
                  note=f"A replay is {CALLS_PER_GRAPH} calls. Device-paced: in every round the host enqueued the "
                       "batch of replays in less time than the GPU took to run it.")


def host_table(run):
    """The host-path view: stream launches' warm batches beside the device time of the same contender."""
    s = _summaries(run)
    rows = []
    for shape in s["shapes"]:
        for name in s["contenders"]:
            host = s["host_view"].get(variant(name, shape, "stream"))
            if host is None:
                continue
            rows.append({"shape": shape, "contender": label(name), "stream batch, event per call (µs)": host["event_us"],
                         "stream batch, host enqueue per call (µs)": host["enqueue_us"],
                         "host-bound": host["host_bound"],
                         "device time, warm (µs)": s["device"].get(name, {}).get(shape, {}).get("warm")})
    return _table(rows, ["shape", "contender"],
                  note="Host-bound: the host's enqueue took at least nine tenths of the batch's event time, so the "
                       "stream batch measured the pace of submission, not the GPU.")


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
            rows.append({"shape": shape, "path": label(name), "stream / graph, warm": ratio.get("warm"),
                         "stream / graph, cold": ratio.get("cold"),
                         "setup, capture to first replay (µs)": sum(setup.get(k, 0.0) for k in (
                             "capture_us", "end_capture_us", "instantiate_us", "upload_us", "first_replay_us"))})
    return _table(rows, ["shape", "path"])


# ---------------------------------------------------------------- bytes, targets, libraries
def dram_table(run):
    """Logical against measured DRAM bytes per contender at the profiled shape."""
    s = _summaries(run)
    rows = [{"shape": shape, "contender": label(name), "logical (MB)": v["logical_bytes"] / 1e6,
             "DRAM read (MB)": v["read_bytes"] / 1e6, "DRAM written (MB)": v["write_bytes"] / 1e6,
             "measured / logical": v["measured_over_logical"]}
            for shape, entry in s["dram"].items() for name, v in entry["contenders"].items()]
    if not rows:
        rows = [{"shape": shape, "why no counters": entry["error"] or "no counter values"}
                for shape, entry in s["dram"].items()] or [{"shape": "—", "why no counters": "no profile was taken"}]
        return _table(rows, "shape")
    return _table(rows, ["shape", "contender"], formats={"measured / logical": "ratio"})


def targets_table(run):
    rows = []
    for target in _summaries(run)["targets"]:
        measured = None if target["measured"] is None else {
            "median": target["measured"], "ci_low": target["ci_low"], "ci_high": target["ci_high"]}
        rows.append({"target": f"{TARGET_LABELS[target['ratio']]} {target['sense']} {target['threshold']}",
                     "shape": target["shape"], "L2": target["l2"], "measured (device time)": measured,
                     "verdict": _verdict(target["met"])})
    return _table(rows, ["target", "shape", "L2"], formats={"measured (device time)": "ci"})


def baseline_table(run):
    s = _summaries(run)
    rows = []
    for name, entry in s["baselines"].items():
        timed = [shape for shape in s["shapes"] if shape in s["device"].get(name, {})]
        rows.append({"library": label(name), "timed at": ", ".join(timed) or "—",
                     "how": _reasons({shape: ", ".join(f"{k} {v}" for k, v in sorted(how.items()))
                                      for shape, how in entry.get("setup", {}).items()}, s["shapes"]),
                     "not timed": _reasons(entry["unavailable"], s["shapes"])})
    if not rows:
        rows = [{"library": "—", "timed at": "—", "how": "no library was requested", "not timed": "—"}]
    return _table(rows, "library")


def _reasons(by_shape: dict, shapes: list[str]) -> str:
    """{shape: text} as one entry per distinct text with the shapes it applies to ("all shapes" where all)."""
    by_reason = {}
    for shape in shapes:
        if shape in by_shape:
            by_reason.setdefault(by_shape[shape], []).append(shape)
    return "; ".join(f"{'all shapes' if len(where) == len(shapes) else ', '.join(where)}: {why}"
                     for why, where in by_reason.items()) or "—"


def _verdict(met) -> str:
    return {True: "met", False: "missed", None: "not measured (library absent)"}[met]


# ---------------------------------------------------------------- figures
def _groups(run) -> list[list[str]]:
    """The non-copy contenders in groups of at most MAX_SERIES (one figure row each)."""
    names = [n for n in _summaries(run)["contenders"] if n != "copy"]
    return [names[i:i + MAX_SERIES] for i in range(0, len(names), MAX_SERIES)] or [[]]


def ratio_figure(run):
    """Device time per call over the copy's, per shape: warm L2 left, cold right; 1 is the copy."""
    from launchlab.present import figures

    s = _summaries(run)
    groups = _groups(run)
    fig, axes = figures.figure(len(groups), 2, height=3.2)
    for row, names in enumerate(groups):
        for column, l2 in enumerate(L2_STATES):
            series = {label(n): [s["ratios"]["graph"].get(f"{n}_over_copy", {}).get(shape, {}).get(l2)
                                 for shape in s["shapes"]] for n in names}
            figures.sweep(axes[row, column], s["shapes"], series, ceiling=1.0, ceiling_label="copy", logy=True,
                          ylabel="device time / copy's" if column == 0 else None)
            axes[row, column].set_title(f"{l2} L2")
            axes[row, column].tick_params(axis="x", labelrotation=30)
            _plain_log_ticks(axes[row, column])
    return figures.finish(fig, shared_legend=len(groups) == 1)


def _plain_log_ticks(ax) -> None:
    """Ratios on a log axis read as 1, 1.5, 2, 3, not as powers of ten."""
    from matplotlib.ticker import FuncFormatter

    for axis in (ax.yaxis,):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "1235" else ""))


def bandwidth_figure(run):
    """Logical GB/s from device time per call, per shape, with the same run's copy as the ceiling."""
    from launchlab.present import figures

    s = _summaries(run)
    groups = _groups(run)
    fig, axes = figures.figure(len(groups), 2, height=3.2)
    copy = s["bandwidth"].get("copy", {})
    for row, names in enumerate(groups):
        for column, l2 in enumerate(L2_STATES):
            series = {label(n): [s["bandwidth"].get(n, {}).get(shape, {}).get(f"{l2}_gbs") for shape in s["shapes"]]
                      for n in names}
            ceiling = [copy.get(shape, {}).get(f"{l2}_gbs", float("nan")) for shape in s["shapes"]]
            figures.sweep(axes[row, column], s["shapes"], series, ceiling=ceiling, ceiling_label="copy",
                          ylabel="logical GB/s" if column == 0 else None)
            axes[row, column].set_title(f"{l2} L2")
            axes[row, column].tick_params(axis="x", labelrotation=30)
    return figures.finish(fig, shared_legend=len(groups) == 1)


def bytes_figure(run):
    """Logical bytes against DRAM bytes measured by Nsight Compute, per contender."""
    import numpy as np

    from launchlab.present import figures

    s = _summaries(run)
    fig, axes = figures.figure(1, 1, height=3.2)
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
    ax.set_xticks(xs, [f"{label(name)}\n{shape}" for shape, name, _ in entries])
    ax.set_ylabel("MB per call")
    ax.grid(axis="y", alpha=0.3)
    return figures.finish(fig)


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
                    values[f"{prefix}{ratio_name}_{shape}_{l2}"] = f"{ratio['median']:.2f}"
                    values[f"{prefix}{ratio_name}_{shape}_{l2}_ci"] = f"{ratio['ci_low']:.2f}–{ratio['ci_high']:.2f}"
    return values


def _config_values(s: dict) -> dict:
    values = {}
    for shape, config in s["configs"].items():
        values[f"tier_{shape}"] = config["tier"]
        values[f"block_{shape}"] = str(config["block"])
        values[f"module_{shape}"] = config["module"]
    values["fused_builds"] = str(len({c["module"] for c in s["configs"].values()}))
    return values


def _target_sentences(s: dict) -> dict:
    """Short computed verdicts for the prose (never typed by hand)."""
    values = {}
    for target in s["targets"]:
        values[f"verdict_{target['key'].replace('.', '_')}"] = _verdict(target["met"])
    copy_targets = [t for t in s["targets"] if t["ratio"] == "fused_rms_over_copy"]
    missed = [f"{t['shape']} {t['l2']} ({t['measured']:.2f})" for t in copy_targets if t["met"] is False]
    measured = [t for t in copy_targets if t["met"] is not None]
    values["copy_target_summary"] = ("not measured" if not measured else f"met in all {len(measured)} cases" if not missed
                                     else f"missed in {len(missed)} of {len(measured)} cases: " + ", ".join(missed))
    for library in ("cudnn", "torch"):
        for l2 in L2_STATES:
            rows = [t for t in s["targets"] if t["ratio"] == f"{library}_over_fused_plain" and t["l2"] == l2
                    and t["sense"] == "above" and t["met"] is not None]
            lost = [f"{t['shape']} ({t['measured']:.2f})" for t in rows if not t["met"]]
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
                bound.setdefault(label(name), []).append(shape)
    bound = [f"{name} at {', '.join(shapes)}" for name, shapes in bound.items()]
    late = sum(p["host_enqueue_exceeded_wait"] for p in s["cold_pacing"].values())
    total = sum(p["samples"] for p in s["cold_pacing"].values())
    return {"graph_paced_summary": (f"all {len(pacing)} graph variants" if not host_paced else
                                    f"{len(paced)} of {len(pacing)} graph variants; host-paced: " + ", ".join(host_paced)),
            "graph_host_share_max": "n/a" if largest is None else f"{largest:.2f}",
            "host_bound_summary": "; ".join(bound) if bound else "none of the contenders at any shape",
            "cold_late": str(late), "cold_samples": str(total)}


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
        for key in ("tier", "block", "module"):
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

