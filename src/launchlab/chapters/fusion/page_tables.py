"""Chapter 3's tables at the fixed shapes, read from the run's summaries: builds and resources, device time and
bandwidth, paired ratios, how the device time was obtained, DRAM bytes, targets and libraries."""
from __future__ import annotations

from launchlab.chapters.fusion import CALLS_PER_GRAPH, DEVICE, L2_STATES, is_library, plan_kernels, submission_paths
from launchlab.chapters.fusion.page_format import (build_label, design_label, label, page_table, plan_place, ratio_cell,
                                                   shape_label, summaries_of, verdict_text)
from launchlab.chapters.fusion.summary import variant
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

TARGET_LABELS = {"fused_rms_over_copy": "fused RMS time / copy time", "cudnn_over_fused_plain": "cuDNN time / fused plain time",
                 "torch_over_fused_plain": "torch time / fused plain time"}



def config_table(run):
    """Which fused design and build serves which fixed shape: where a row lives, threads, shared memory, registers."""
    s = summaries_of(run)
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
    return page_table(rows, "shape", formats={"build": "text", "row kept in": "text", "design": "text",
                                          "dynamic shared": "text"},
                  units={"threads": "per block", "dynamic shared": "bytes", "registers, RMS": "per thread",
                         "registers, plain": "per thread"},
                  note="Build: the compile-time defines (row kernel: b<threads> r<register chunks> u<unroll> "
                       "m<min blocks per SM>; designs: b<threads> l<lanes> r<chunks per lane> c<cluster blocks> s<slice chunks in registers>). Shapes with equal defines share a build. The launch policy is declared "
                       "in the chapter's code before any run.")


def policy_table(run):
    """The launch policy over every shape of the run (fixed and swept): which design served which row lengths."""
    s = summaries_of(run)
    by_design: dict = {}
    for series in ("4096", "128"):
        for point in s["sweep"].get(series, []):
            by_design.setdefault((point["design"], point["rows"]), []).append(point["cols"])
    for shape in s["shapes"]:
        rows_, cols = workloads.parse_shapes(shape)[0]
        by_design.setdefault((s["configs"][shape]["design"], rows_), []).append(cols)
    table = [{"rows": rows_, "design": design_label(design), "shortest row": min(cols), "longest row": max(cols),
              "shapes": len(set(cols))}
             for (design, rows_), cols in sorted(by_design.items(), key=lambda kv: (-kv[0][1], min(kv[1])))]
    return page_table(table, ["rows", "design"], formats={"design": "text"},
                      caption="Which design served the fixed shapes and the 128-row slice",
                      units={"rows": "count", "shortest row": "floats", "longest row": "floats", "shapes": "count"},
                      note="Row lengths N in floats (4 bytes). The policy (per shape, the candidate of least predicted "
                           "time under the cost model fitted on a calibration plane) was fixed before the run. The "
                           "plane's points are counted in the chapter, and each point's design is in the table of "
                           "every point below.")


RESOURCE_COLUMNS = {"registers": ("Registers", "per thread"), "shared_bytes": ("Static shared", "bytes"),
                    "local_bytes": ("Local", "bytes"), "spill_bytes": ("Spills", "bytes"),
                    "stack_bytes": ("Stack", "bytes")}
KERNEL_LABELS = {"fused_rms_softmax": "fused RMS", "fused_softmax": "fused plain"}


def resource_table(run):
    """Registers, shared, local memory, spills (stores + loads) and stack per kernel; the full table as CSV."""
    rows = [{"build": build_label(build), "kernel": KERNEL_LABELS.get(kernel, kernel), **entry,
             "spill_bytes": entry.get("spill_stores", 0) + entry.get("spill_loads", 0)}
            for build, kernels in summaries_of(run)["resources"].items() for kernel, entry in kernels.items()]
    rows = [{k: row.get(k) for k in ("build", "kernel", *RESOURCE_COLUMNS)} for row in rows]
    return page_table(rows, ["build", "kernel"], formats={"build": "text", "kernel": "text"},
                  headers={k: f"{title} ({unit})" for k, (title, unit) in RESOURCE_COLUMNS.items()},
                  csv="fusion-resources",
                  note="From the loaded binaries and ptxas. Spills: spill stores plus spill loads; nonzero local "
                       "memory or spills would mean spilled registers.")


# ---------------------------------------------------------------- device time and bandwidth
def device_table(run):
    """Per shape and contender: device time per call warm and cold, logical GB/s, and % of the copy's GB/s."""
    s = summaries_of(run)
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
    return page_table(rows, ["shape", "contender"], formats={"warm_pct": "pct", "cold_pct": "pct", "shape": "text"},
                  headers={"warm": "Warm (µs)", "cold": "Cold (µs)", "warm_gbs": "Warm (GB/s)",
                           "cold_gbs": "Cold (GB/s)", "warm_pct": "Warm (% of the copy's GB/s)", "cold_pct": "Cold (% of the copy's GB/s)"},
                  csv="fusion-device-time",
                  note=f"Device time per call and logical GB/s (logical bytes per call over device time). Warm: "
                       f"graphs of {CALLS_PER_GRAPH} captured calls, event time per replay divided by "
                       f"{CALLS_PER_GRAPH}. Cold: one stream call after the L2 flush and the GPU wait.")


def _long_ratio_rows(run, names, ratio_of) -> list[dict]:
    """One row per shape and contender: its paired ratio warm and cold for each (column, ratio name) of ratio_of."""
    s = summaries_of(run)
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
    names = [n for n in summaries_of(run)["contenders"] if n != "copy" and not is_library(n)]
    rows = _long_ratio_rows(run, names, lambda n: [("over the copy", f"{n}_over_copy")])
    return page_table(rows, ["shape", "contender"], formats={"shape": "text", **_ratio_formats(rows)},
                  note="Device time per call over the copy's in the same round; 1 is the copy, below 1 faster "
                       "than the copy. Brackets: 95 % bootstrap interval of the median over the rounds.")


def library_ratio_table(run):
    """Each library's device time over the fused plain kernel's and over the copy's, paired per round."""
    libraries = [n for n in summaries_of(run)["contenders"] if is_library(n)]
    rows = _long_ratio_rows(run, libraries, lambda n: [("over fused plain", f"{n}_over_fused_plain"),
                                                       ("over the copy", f"{n}_over_copy")])
    return page_table(rows, ["shape", "contender"], formats={"shape": "text", **_ratio_formats(rows)},
                  headers={"contender": "Library"}, csv="fusion-library-ratios",
                  note="Library device time per call over the fused plain kernel's (above 1: the fused kernel was "
                       "faster) and over the copy's, paired within rounds. Brackets: 95 % bootstrap interval of the "
                       "median over the rounds.")


# ---------------------------------------------------------------- how the device time was obtained
def pacing_table(run):
    """Per graph32 variant: host enqueue per replay against event time per replay (device-paced when below)."""
    s = summaries_of(run)
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
    return page_table(rows, ["shape", "contender"], formats={"largest enqueue / event (%)": "pct", "shape": "text"},
                  csv="fusion-graph-pacing",
                  note=f"A replay is {CALLS_PER_GRAPH} calls. Largest enqueue / event: the host's enqueue time of "
                       "a batch of replays as a share of the batch's event time, the largest over the rounds. "
                       "Device-paced: in every round the host enqueued the batch in less time than the GPU took "
                       "to run it.")


def host_table(run):
    """The host-path view: stream launches' warm batches beside the device time of the same contender."""
    s = summaries_of(run)
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
    return page_table(rows, ["shape", "contender"], formats={"shape": "text"}, csv="fusion-host-view",
                  note="Stream: a warm batch of calls launched one by one from Python, between CUDA events (host "
                       "view, not a GPU cost). Host-bound: the host's enqueue took at least nine tenths of the "
                       "batch's event time, so the batch measured the pace of submission.")


def submission_table(run):
    """A path's stream launch over its one-call graph replay (paired), and the graph's one-off setup cost."""
    s = summaries_of(run)
    rows = []
    for shape in s["shapes"]:
        for name in submission_paths():
            ratio = s["ratios"]["submission"].get(f"{name}_stream_over_graph", {}).get(shape)
            if ratio is None:
                continue
            setup = s["graph_setup"].get(variant(name, shape, "graph"), {})
            rows.append({"shape": shape_label(shape), "path": label(name),
                         "stream / graph, warm (×)": ratio.get("warm"), "stream / graph, cold (×)": ratio.get("cold"),
                         "set-up, capture to first replay (µs)": sum(setup.get(k, 0.0) for k in (
                             "capture_us", "end_capture_us", "instantiate_us", "upload_us", "first_replay_us"))})
    formats = {"shape": "text", "stream / graph, warm (×)": ratio_cell, "stream / graph, cold (×)": ratio_cell}
    return page_table(rows, ["shape", "path"], formats=formats,
                  note="Stream launch over the replay of a one-call graph, paired within rounds. Brackets: 95 % "
                       "bootstrap interval of the median over the rounds. Set-up: one capture, measured once.")


# ---------------------------------------------------------------- bytes, targets, libraries
def dram_table(run):
    """Logical against measured DRAM bytes per contender at the profiled shape."""
    s = summaries_of(run)
    rows = [{"shape": shape_label(shape), "contender": label(name), "logical (MB)": v["logical_bytes"] / 1e6,
             "DRAM read (MB)": v["read_bytes"] / 1e6, "DRAM written (MB)": v["write_bytes"] / 1e6,
             "measured / logical (×)": v["measured_over_logical"]}
            for shape, entry in s["dram"].items() for name, v in entry["contenders"].items()]
    if not rows:
        rows = [{"shape": shape, "why no counters": entry["error"] or "no counter values"}
                for shape, entry in s["dram"].items()] or [{"shape": "—", "why no counters": "no profile was taken"}]
        return page_table(rows, "shape")
    return page_table(rows, ["shape", "contender"], formats={"measured / logical (×)": "ratio", "shape": "text"},
                  note="One profiled call per kernel (Nsight Compute), caches flushed by the profiler; MB = 10⁶ bytes.")


def targets_table(run):
    rows = []
    for target in summaries_of(run)["targets"]:
        measured = None if target["measured"] is None else {
            "median": target["measured"], "ci_low": target["ci_low"], "ci_high": target["ci_high"]}
        rows.append({"target": f"{TARGET_LABELS[target['ratio']]} {target['sense']} {target['threshold']}",
                     "shape": shape_label(target["shape"]), "L2": target["l2"], "measured (×)": measured,
                     "verdict": verdict_text(target["met"])})
    return page_table(rows, ["target", "shape", "L2"], formats={"measured (×)": ratio_cell, "shape": "text"},
                  csv="fusion-targets",
                  note="Measured: the paired device-time ratio of this run. Brackets: 95 % bootstrap interval of "
                       "the median over the rounds.")


def baseline_table(run):
    s = summaries_of(run)
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
    return page_table(rows, "library")


def _reasons(by_shape: dict, shapes: list[str]) -> str:
    """{shape: text} as one entry per distinct text with the shapes it applies to ("all shapes" where all)."""
    by_reason = {}
    for shape in shapes:
        if shape in by_shape:
            by_reason.setdefault(by_shape[shape], []).append(shape_label(shape))
    return "; ".join(f"{'all shapes' if len(where) == len(shapes) else ', '.join(where)}: {why}"
                     for why, where in by_reason.items()) or "—"


