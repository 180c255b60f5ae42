"""Chapter 3's summaries and headline, from the run's raw files alone (NumPy only).

Time per CALL. A `graph32` sample's event interval per invocation covers CALLS_PER_GRAPH calls of its
contender; `per_call` divides by `calls_per_invocation(variant)` (median and quantiles scale exactly), and
`call_ratio` scales a paired ratio by the two sides' calls. Every other submission is one call.

Device time, which every comparison uses:
  * warm L2: the warm_batch event interval of the graph32 variant, per call;
  * cold L2: the cold event interval of the stream variant (one call after the flush and the GPU wait).
The stream variants' warm batches are the host-path view, shown beside them and never compared as device time.

Headline keys (<l2> is warm or cold):
  graph.<a>_over_<b>.<shape>.<l2>         device-time ratio a/b per call, paired per round (medians; intervals
                                          in summaries): warm from graph32 replays, cold from flushed stream calls
  stream.<a>_over_<b>.<shape>.warm        the same ratio over warm stream-launch batches (host-path view)
  device_us_per_call.<contender>.<shape>.<l2>
  device_logical_gbs.<contender>.<shape>.<l2>   logical bytes per call over device time per call
  graph32_device_paced.<shape>            every graph32 batch at the shape was enqueued faster than the GPU ran it
  target_met.<target>.<shape>.<l2>        verdict on a declared performance target (True/False)
  dram_over_logical.<contender>.<shape>   Nsight Compute's DRAM bytes over logical bytes at a profile shape
  sweep.<a>_over_copy.max_n_ge_1024.<l2>  the largest paired device-time ratio over the sweep's points with N >= 1024
  sweep.<a>_over_copy.max_n_lt_1024.<l2>  ... and below N = 1024 (a: fused_plain, fused_rms)
  sweep.min_speedup.<lib>.<l2>            the smallest library time / fused plain time over the sweep's points
  sweep.price_of_rho.{min,median,max}.<l2>  fused RMS time / fused plain time over the sweep's points
  sweep_target_met.<target>.<l2>          verdicts on the sweep's declared targets
  plane.points, plane.floor.points        the random plane's points, and those in its floor class
  plane.fused_{plain,rms}_over_copy.{geomean,p90,max}.<l2>   over the bandwidth regime (copy ceiling >= 10 us; max
                                          outside the floor class): device time over the faster copy, per point
  plane.fused_plain_minus_copy_us.{median,p90}.<l2>   over the latency regime: µs added over the copy ceiling
  plane.floor.fused_plain_over_copy.max.<l2>           the floor class's worst ratio
  plane.faster_than.<lib>.share.<l2>      share of the points where <lib> ran with its time / fused plain's interval
                                          above 1 (a tie is not faster)
  plane.worst_library_ratio.<lib>.<l2>    the smallest <lib> time / fused plain time over the plane
  plane.model_error.{median,p90}.<l2>     |predicted / measured - 1| of fused plain where the plan predicts
  (summary_plane.py holds the plane's summary; a run recorded before the plane has none)

The sweep (4096 x 128 i and 128 x N) is summarised under "sweep": per point and contender, device time per call,
logical GB/s and paired ratios; its warm figures come from graphs of sweep_calls(rows, cols) calls (graph32 at a
fixed shape), its cold figures from flushed stream calls.
"""
from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path

from launchlab.chapters.fusion import (CHAPTER, COPY_RATIO_SHAPES, COPY_RATIO_TARGET, CUDNN_SPEEDUP_SHAPE,
                                       CUDNN_SPEEDUP_TARGET, DEVICE, L2_STATES, LIBRARIES, SWEEP_COPY_TARGETS, Parameters,
                                       calls_per_invocation, contenders, device_submission, is_library,
                                       logical_bytes_per_call, submission_paths, sweep_contenders, sweep_grid)
from launchlab.chapters.fusion.summary_plane import headline as plane_headline, summarize_plane
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import workloads
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl

QUANTILE_KEYS = ("median", "p10", "p90", "ci_low", "ci_high")
HOST_BOUND_SHARE = 0.9      # a stream batch whose host enqueue took this share of its event time ran at the host's pace


def variant(name: str, shape: str, submission: str) -> str:
    return str(VariantId(name, shape, submission))


def per_call(summary: dict, calls: int) -> dict:
    """A per-invocation summary divided by the invocation's calls (quantiles of a scaled sample scale)."""
    return {key: (value / calls if key in QUANTILE_KEYS else value) for key, value in summary.items()}


def call_ratio(grouped: dict, numerator: str, denominator: str, measurement: str) -> dict:
    """numerator/denominator of the event time per CALL, paired per round, with its bootstrap interval
    (`grouped`: the run's samples by variant)."""
    pair = grouped.get(numerator, []) + grouped.get(denominator, [])
    ratio = stats.paired_ratio(pair, numerator, denominator, measurement, "event_us")
    scale = calls_per_invocation(denominator) / calls_per_invocation(numerator)
    return {key: (value * scale if key in QUANTILE_KEYS else value) for key, value in ratio.items()}


def ratio_pairs(names: list[str]) -> list[tuple[str, str]]:
    """(numerator, denominator) contenders compared: everything over the copy, the row path and plain mode
    over fused RMS, each library over fused plain."""
    pairs = [(name, "copy") for name in names if name != "copy"]
    pairs += [(a, b) for a, b in (("row4", "fused_rms"), ("fused_plain", "fused_rms")) if a in names and b in names]
    pairs += [(name, "fused_plain") for name in names if is_library(name)]
    return pairs


def by_variant(samples: list[dict]) -> dict[str, list[dict]]:
    grouped = defaultdict(list)
    for sample in samples:
        grouped[sample["variant"]].append(sample)
    return grouped


def parameters_of(record) -> Parameters:
    """The run's typed parameters; a run made before the plane existed recorded no plane_points and measured none."""
    parameters = CHAPTER.parameters_of(record)
    return parameters if "plane_points" in record.parameters else dataclasses.replace(parameters, plane_points=0)


def summarize(run_dir: Path, record) -> dict:
    run_dir = Path(run_dir)
    samples = read_jsonl(run_dir / SAMPLES_FILE)
    parameters = parameters_of(record)
    shapes = [workloads.shape_name(*s) for s in parameters.shapes]
    timing = stats.summarize(samples)
    grouped = by_variant(samples)
    measured = [n for n in contenders(parameters) if any(variant(n, s, "stream") in timing for s in shapes)]
    device = device_times(timing, measured, shapes)
    paired = ratios(grouped, timing, measured, shapes)
    return {
        "shapes": shapes,
        "contenders": measured,
        "timing": timing,
        "device": device,
        "graph_pacing": graph_pacing(samples),
        "host_view": host_view(timing, shapes),
        "cold_pacing": cold_pacing(samples, record.protocol["cold_wait_ns"]),
        "bandwidth": bandwidth(device, shapes),
        "ratios": paired,
        "targets": evaluate_targets(paired["graph"], shapes),
        "resources": summarize_resources(run_dir),
        "dram": summarize_dram(run_dir),
        "graph_setup": json.loads((run_dir / "graphs/setup.json").read_text()),
        "configs": record.details["fused_plans"],
        "sweep": summarize_sweep(grouped, timing, parameters, record.details["fused_plans"]),
        "sanitizer": read_sanitizer(run_dir),
        "baselines": record.details.get("baselines", {}),
        "cold_l2": record.details.get("cold_l2", {}),
    } | ({"plane": summarize_plane(grouped, timing, parameters, record.details["fused_plans"], record.device,
                                   record.details.get("baselines", {}))} if "plane_points" in record.parameters else {})


def device_times(timing: dict, names: list[str], shapes: list[str]) -> dict:
    """{contender: {shape: {"warm", "cold"}}}: device time per call (µs), median and p10/p90 over the samples."""
    result = {}
    for name in names:
        for shape in shapes:
            warm, cold = variant(name, shape, DEVICE), variant(name, shape, "stream")
            entry = {}
            if warm in timing:
                entry["warm"] = per_call(timing[warm]["warm_batch"]["event_us"], calls_per_invocation(warm))
            if "cold" in timing.get(cold, {}):
                entry["cold"] = timing[cold]["cold"]["event_us"]
            if entry:
                result.setdefault(name, {})[shape] = entry
    return result


def graph_pacing(samples: list[dict]) -> dict:
    """Per graph-of-many-calls variant: the host's enqueue time per replay against the event time per replay.
    `device_paced` holds when, in every round, the host enqueued the batch in less time than the GPU ran it."""
    shares, enqueue, event = defaultdict(list), defaultdict(list), defaultdict(list)
    for sample in samples:
        if sample["measurement"] == "warm_batch" and calls_per_invocation(sample["variant"]) > 1:
            name = sample["variant"]
            shares[name].append(sample["enqueue_ns"] / (sample["event_ms"] * 1e6))
            enqueue[name].append(sample["enqueue_ns"] / 1e3 / sample["count"])
            event[name].append(sample["event_ms"] * 1e3 / sample["count"])
    return {name: {"host_enqueue_us_per_replay": stats.quantiles(enqueue[name]),
                   "event_us_per_replay": stats.quantiles(event[name]),
                   "host_share_max": float(max(shares[name])), "device_paced": bool(max(shares[name]) < 1.0)}
            for name in sorted(shares)}


def host_view(timing: dict, shapes: list[str]) -> dict:
    """Per one-call variant at a fixed shape (stream launches, one-call graphs), warm batches: event time and host
    enqueue per call, and whether the host set the pace (its enqueue took at least HOST_BOUND_SHARE of the event
    time)."""
    result = {}
    for name, measurements in timing.items():
        if calls_per_invocation(name) != 1 or "warm_batch" not in measurements or VariantId.parse(name).case not in shapes:
            continue
        batch = measurements["warm_batch"]
        result[name] = {"event_us": batch["event_us"], "enqueue_us": batch["enqueue_us"],
                        "host_bound": bool(batch["enqueue_us"]["median"] >= HOST_BOUND_SHARE * batch["event_us"]["median"])}
    return result


def cold_pacing(samples: list[dict], wait_ns: int) -> dict:
    """Per cold variant: how many invocations took the host longer to enqueue than the GPU wait lasted
    (those start events may have waited for the host)."""
    late, total = defaultdict(int), defaultdict(int)
    for sample in samples:
        if sample["measurement"] == "cold":
            total[sample["variant"]] += 1
            late[sample["variant"]] += sample["enqueue_ns"] > wait_ns
    return {name: {"samples": total[name], "host_enqueue_exceeded_wait": late[name]} for name in sorted(total)}


def bandwidth(device: dict, shapes: list[str]) -> dict:
    """{contender: {shape: logical bytes per call, GB/s warm and cold, and % of the same run's copy}}."""
    result = {}
    for name, by_shape in device.items():
        for shape, times in by_shape.items():
            nbytes = logical_bytes_per_call(name, *workloads.parse_shapes(shape)[0])
            entry = {"logical_bytes_per_call": nbytes}
            for l2, summary in times.items():
                entry[f"{l2}_gbs"] = stats.gigabytes_per_second(nbytes, summary["median"])
                copy = device.get("copy", {}).get(shape, {}).get(l2)
                if copy:
                    copy_bytes = logical_bytes_per_call("copy", *workloads.parse_shapes(shape)[0])
                    entry[f"{l2}_pct_of_copy"] = 100 * entry[f"{l2}_gbs"] / stats.gigabytes_per_second(copy_bytes, copy["median"])
            result.setdefault(name, {})[shape] = entry
    return result


def device_ratio_table(grouped, timing, names, shapes) -> dict:
    """{"<a>_over_<b>": {shape: {"warm": graph32 ratio, "cold": flushed stream ratio}}} where both sides ran."""
    table = {}
    for a, b in ratio_pairs(names):
        for shape in shapes:
            entry = {}
            for l2, submission, measurement in (("warm", DEVICE, "warm_batch"), ("cold", "stream", "cold")):
                top, bottom = variant(a, shape, submission), variant(b, shape, submission)
                if measurement in timing.get(top, {}) and measurement in timing.get(bottom, {}):
                    entry[l2] = call_ratio(grouped, top, bottom, measurement)
            if entry:
                table.setdefault(f"{a}_over_{b}", {})[shape] = entry
    return table


def ratios(grouped, timing, names, shapes) -> dict:
    """Paired ratios: `graph` (device time, warm and cold), `stream` (warm stream launches: the host-path
    view), `submission` (a path's stream launch over its one-call graph, warm and cold)."""
    stream = {}
    for a, b in ratio_pairs(names):
        for shape in shapes:
            top, bottom = variant(a, shape, "stream"), variant(b, shape, "stream")
            if "warm_batch" in timing.get(top, {}) and "warm_batch" in timing.get(bottom, {}):
                stream.setdefault(f"{a}_over_{b}", {})[shape] = {"warm": call_ratio(grouped, top, bottom, "warm_batch")}
    submission = {}
    for name in (n for n in submission_paths() if n in names):
        for shape in shapes:
            top, bottom = variant(name, shape, "stream"), variant(name, shape, "graph")
            entry = {l2: call_ratio(grouped, top, bottom, measurement)
                     for l2, measurement in (("warm", "warm_batch"), ("cold", "cold"))
                     if measurement in timing.get(top, {}) and measurement in timing.get(bottom, {})}
            if entry:
                submission.setdefault(f"{name}_stream_over_graph", {})[shape] = entry
    return {"graph": device_ratio_table(grouped, timing, names, shapes), "stream": stream, "submission": submission}


TARGET_NAMES = {"fused_rms_over_copy": "fused_rms_within_copy", "cudnn_over_fused_plain": "faster_than_cudnn",
                "torch_over_fused_plain": "faster_than_torch"}


def evaluate_targets(device_ratios: dict, shapes: list[str]) -> list[dict]:
    """The declared performance targets against the paired device-time medians: met, missed, or not measured."""
    wanted = [("fused_rms_over_copy", shape, COPY_RATIO_TARGET, "at most") for shape in COPY_RATIO_SHAPES if shape in shapes]
    wanted += [(f"{lib}_over_fused_plain", shape, 1.0, "above") for lib in ("cudnn", "torch") for shape in shapes]
    if CUDNN_SPEEDUP_SHAPE in shapes:
        wanted.append(("cudnn_over_fused_plain", CUDNN_SPEEDUP_SHAPE, CUDNN_SPEEDUP_TARGET, "at least"))
    found = []
    for ratio_name, shape, threshold, sense in wanted:
        for l2 in L2_STATES:
            entry = {"ratio": ratio_name, "shape": shape, "l2": l2, "threshold": threshold, "sense": sense,
                     "key": target_key(ratio_name, threshold, sense, shape, l2)}
            ratio = device_ratios.get(ratio_name, {}).get(shape, {}).get(l2)
            if ratio is None:
                entry.update({"measured": None, "met": None})
            else:
                value = ratio["median"]
                met = value <= threshold if sense == "at most" else value > threshold if sense == "above" else value >= threshold
                entry.update({"measured": value, "ci_low": ratio["ci_low"], "ci_high": ratio["ci_high"], "met": bool(met)})
            found.append(entry)
    return found


def target_key(ratio_name: str, threshold: float, sense: str, shape: str, l2: str) -> str:
    """`<what is promised>.<shape>.<l2>`, e.g. fused_rms_within_copy_1.15x.4096x4096.warm."""
    name = TARGET_NAMES[ratio_name]
    if sense == "at least":
        name = f"{ratio_name}_at_least_{threshold}"
    elif sense == "at most":
        name = f"{name}_{threshold}x"
    return f"{name}.{shape}.{l2}"


# ---------------------------------------------------------------- the sweep
def sweep_pairs(names: list[str]) -> list[tuple[str, str]]:
    pairs = [(a, b) for a, b in (("fused_plain", "copy"), ("fused_rms", "copy"), ("fused_rms", "fused_plain"))
             if a in names and b in names]
    return pairs + [(name, "fused_plain") for name in names if is_library(name) and "fused_plain" in names]


def summarize_sweep(grouped: dict, timing: dict, parameters: Parameters, plans: dict) -> dict:
    """Per series ("4096", "128") and point: N, the design, device time per call and logical GB/s per
    contender (warm, cold), and paired ratios (over the copy, RMS over plain, each library over fused plain)."""
    names = sweep_contenders(parameters)
    result = {}
    for series, shapes in sweep_grid(parameters).items():
        points = []
        for rows, cols in shapes:
            shape = workloads.shape_name(rows, cols)
            warm_submission = device_submission(parameters, rows, cols)
            submissions = {"warm": (warm_submission, "warm_batch"), "cold": ("stream", "cold")}
            point = {"shape": shape, "rows": rows, "cols": cols, "design": plans[shape]["design"],
                     "module": plans[shape]["module"], "calls_per_replay": calls_per_invocation(variant("copy", shape, warm_submission)),
                     "device_us": {}, "gbs": {}, "ratios": {}}
            for name in names:
                for l2, (submission, measurement) in submissions.items():
                    vid = variant(name, shape, submission)
                    if measurement not in timing.get(vid, {}):
                        continue
                    summary = per_call(timing[vid][measurement]["event_us"], calls_per_invocation(vid))
                    point["device_us"].setdefault(name, {})[l2] = summary["median"]
                    point["gbs"].setdefault(name, {})[l2] = stats.gigabytes_per_second(
                        logical_bytes_per_call(name, rows, cols), summary["median"])
            for a, b in sweep_pairs(names):
                for l2, (submission, measurement) in submissions.items():
                    top, bottom = variant(a, shape, submission), variant(b, shape, submission)
                    if measurement in timing.get(top, {}) and measurement in timing.get(bottom, {}):
                        ratio = call_ratio(grouped, top, bottom, measurement)
                        point["ratios"].setdefault(f"{a}_over_{b}", {})[l2] = {k: ratio[k] for k in QUANTILE_KEYS}
            points.append(point)
        result[series] = points
    result["extremes"] = sweep_extremes(result)
    result["targets"] = sweep_targets(result)
    return result


def _points(sweep: dict) -> list[dict]:
    return [point for series in ("4096", "128") for point in sweep.get(series, [])]


def sweep_extremes(sweep: dict) -> dict:
    """{"<ratio>.<which>.<l2>": {"value", "shape"}}: the largest ratio over the copy at N >= 1024 and below,
    the smallest library speed-up, and the price of rho (min, median, max)."""
    import numpy as np

    found = {}
    points = _points(sweep)
    for l2 in L2_STATES:
        for ratio in ("fused_plain_over_copy", "fused_rms_over_copy"):
            for which, keep in (("max_n_ge_1024", lambda n: n >= 1024), ("max_n_lt_1024", lambda n: n < 1024)):
                values = [(p["ratios"][ratio][l2]["median"], p["shape"]) for p in points
                          if keep(p["cols"]) and l2 in p["ratios"].get(ratio, {})]
                if values:
                    value, shape = max(values)
                    found[f"{ratio}.{which}.{l2}"] = {"value": value, "shape": shape}
        for lib in LIBRARIES:
            values = [(p["ratios"][f"{lib}_over_fused_plain"][l2]["median"], p["shape"]) for p in points
                      if l2 in p["ratios"].get(f"{lib}_over_fused_plain", {})]
            if values:
                value, shape = min(values)
                found[f"min_speedup.{lib}.{l2}"] = {"value": value, "shape": shape, "points": len(values)}
        prices = [(p["ratios"]["fused_rms_over_fused_plain"][l2]["median"], p["shape"]) for p in points
                  if l2 in p["ratios"].get("fused_rms_over_fused_plain", {})]
        if prices:
            found[f"price_of_rho.min.{l2}"] = dict(zip(("value", "shape"), min(prices)))
            found[f"price_of_rho.max.{l2}"] = dict(zip(("value", "shape"), max(prices)))
            found[f"price_of_rho.median.{l2}"] = {"value": float(np.median([v for v, _ in prices])), "shape": None}
    return found


def sweep_targets(sweep: dict) -> list[dict]:
    """The sweep's declared targets against its paired medians: each fused mode within SWEEP_COPY_TARGETS of the
    copy (by row length), and faster than every library at every point."""
    extremes, found = sweep["extremes"], []
    for l2 in L2_STATES:
        for mode in ("fused_plain", "fused_rms"):
            for which, threshold in SWEEP_COPY_TARGETS.items():
                entry = extremes.get(f"{mode}_over_copy.{which}.{l2}")
                found.append({"key": f"{mode}_within_copy_{threshold}x.{which}.{l2}", "kind": mode, "where": which,
                              "l2": l2, "threshold": threshold,
                              "measured": entry and entry["value"], "shape": entry and entry["shape"],
                              "met": None if entry is None else bool(entry["value"] <= threshold)})
        for lib in LIBRARIES:
            entry = extremes.get(f"min_speedup.{lib}.{l2}")
            found.append({"key": f"faster_than_{lib}.every_point.{l2}", "kind": lib, "where": "every_point", "l2": l2,
                          "threshold": 1.0,
                          "measured": entry and entry["value"], "shape": entry and entry["shape"],
                          "met": None if entry is None else bool(entry["value"] > 1.0)})
    return found


def read_sanitizer(run_dir: Path) -> dict:
    from launchlab.gpu.sanitizer import read_results

    return read_results(run_dir)


def summarize_resources(run_dir: Path) -> dict:
    """Per build and kernel: registers, static shared bytes, local bytes, spills (nvcc's report where kept)."""
    result = {}
    for record_path in sorted((Path(run_dir) / "builds").glob("*/record.json")):
        build = json.loads(record_path.read_text())
        nvcc = (build.get("nvcc") or {}).get("resources", {})
        for kernel, loaded in sorted(build["resources_loaded"].items()):
            entry = {"registers": loaded["registers"], "shared_bytes": loaded["shared_bytes"],
                     "local_bytes": loaded["local_bytes"]}
            if kernel in nvcc:
                entry.update({key: nvcc[kernel][key] for key in ("spill_stores", "spill_loads", "stack_bytes")})
            result.setdefault(record_path.parent.name, {})[kernel] = entry
    return result


def summarize_dram(run_dir: Path) -> dict:
    """Per profiled shape: ncu's DRAM bytes per contender beside its logical bytes per call, or the error."""
    from launchlab.chapters.fusion.profile import ORDER_BEFORE_RECORDED
    from launchlab.gpu.ncu import dram_by_marker, parse_ncu_csv

    result = {}
    for meta_path in sorted((Path(run_dir) / "profiles").glob("ncu_*.json")):
        shape = meta_path.stem.removeprefix("ncu_")
        meta = json.loads(meta_path.read_text())
        measured = dram_by_marker(parse_ncu_csv((meta_path.parent / f"ncu_{shape}.csv").read_text()),
                             meta.get("order", ORDER_BEFORE_RECORDED))
        rows, cols = workloads.parse_shapes(shape)[0]
        entry = {"error": meta.get("error"), "contenders": {}}
        for name, values in sorted(measured.items()):
            nbytes = logical_bytes_per_call(name, rows, cols)
            entry["contenders"][name] = {**values, "logical_bytes": nbytes,
                                         "measured_over_logical": (values["read_bytes"] + values["write_bytes"]) / nbytes}
        result[shape] = entry
    return result


def headline(summaries: dict) -> dict:
    figures = {}
    for kind, by_ratio in (("graph", summaries["ratios"]["graph"]), ("stream", summaries["ratios"]["stream"])):
        for ratio_name, by_shape in by_ratio.items():
            for shape, by_l2 in by_shape.items():
                for l2, ratio in by_l2.items():
                    figures[f"{kind}.{ratio_name}.{shape}.{l2}"] = ratio["median"]
    for name, by_shape in summaries["device"].items():
        for shape, times in by_shape.items():
            for l2, summary in times.items():
                figures[f"device_us_per_call.{name}.{shape}.{l2}"] = summary["median"]
                figures[f"device_logical_gbs.{name}.{shape}.{l2}"] = summaries["bandwidth"][name][shape][f"{l2}_gbs"]
    for shape in summaries["shapes"]:
        paced = [p["device_paced"] for v, p in summaries["graph_pacing"].items() if VariantId.parse(v).case == shape]
        if paced:
            figures[f"graph32_device_paced.{shape}"] = all(paced)
    for target in summaries["targets"]:
        if target["met"] is not None:
            figures[f"target_met.{target['key']}"] = target["met"]
    for shape, entry in summaries["dram"].items():
        for name, values in entry["contenders"].items():
            figures[f"dram_over_logical.{name}.{shape}"] = values["measured_over_logical"]
    for key, entry in summaries["sweep"]["extremes"].items():
        figures[f"sweep.{key}"] = entry["value"]
    for target in summaries["sweep"]["targets"]:
        if target["met"] is not None:
            figures[f"sweep_target_met.{target['key']}"] = target["met"]
    if "plane" in summaries:
        figures.update(plane_headline(summaries["plane"]))
    return figures

