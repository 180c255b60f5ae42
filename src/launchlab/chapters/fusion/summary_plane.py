"""Chapter 3's random plane, summarised from the run's samples alone (NumPy only).

Per point and L2 state: device time per call of every contender (warm: the graph of sweep_calls calls, per call;
cold: one flushed stream call), the copy ceiling (whichever of cudaMemcpyAsync and the float4 copy kernel took less
there), paired ratios over the ceiling with their 95 % intervals, fused plain minus the ceiling in µs, the regime
(bandwidth where the ceiling takes BANDWIDTH_COPY_US or more, else latency), the floor class (plane.floor_reason,
from the device's identity) and the launch-policy model's prediction where the plan carries one.

Over the points, per L2 state: in the bandwidth regime the geometric mean and p90 of fused ÷ copy (bootstrap
intervals, resampling the points) and its max outside the floor class; in the latency regime the median and p90
of fused plain − copy; the floor class's own worst ratio; per library the points where fused plain is faster,
slower or tied (faster only where the paired interval of library ÷ fused plain lies above 1) and the smallest
library ÷ fused plain; the model's error |predicted ÷ measured − 1|, median and p90."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.fusion import (COPIES, L2_STATES, LIBRARIES, PLANE_TARGETS, calls_per_invocation,
                                       logical_bytes_per_call, plane_shapes, sweep_calls, sweep_contenders)
from launchlab.chapters.fusion.plane import floor_reason, regime
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

RESAMPLES = 2000
SEED = 11
QUANTILE_KEYS = ("median", "p10", "p90", "ci_low", "ci_high")
FUSED = ("fused_plain", "fused_rms")


def submissions(rows: int, cols: int) -> dict:
    """{l2: (submission, measurement)} of a plane point's device time."""
    return {"warm": (f"graph{sweep_calls(rows, cols)}", "warm_batch"), "cold": ("stream", "cold")}


def call_ratio(grouped: dict, top: str, bottom: str, measurement: str) -> dict:
    """top ÷ bottom of the event time per call, paired per round, with its bootstrap interval."""
    ratio = stats.paired_ratio(grouped.get(top, []) + grouped.get(bottom, []), top, bottom, measurement, "event_us")
    scale = calls_per_invocation(bottom) / calls_per_invocation(top)
    return {key: ratio[key] * scale for key in QUANTILE_KEYS}


def point_summary(grouped: dict, timing: dict, names: list[str], rows: int, cols: int, plan: dict,
                  device: dict, unavailable: dict) -> dict:
    """One plane point: times, ceiling, ratios, regime, floor class, prediction (see the module's docstring)."""
    shape = workloads.shape_name(rows, cols)
    point = {"shape": shape, "rows": rows, "cols": cols, "bytes": 8 * rows * cols, "design": plan["design"],
             "module": plan["module"], "floor": floor_reason(rows, cols, device), "device_us": {}, "gbs": {},
             "ceiling": {}, "regime": {}, "ratios": {}, "minus_copy_us": {}, "predicted_us": {},
             "skipped": {name: reason for name, reason in unavailable.items() if reason}}
    for l2, (submission, measurement) in submissions(rows, cols).items():
        ids = {name: str(VariantId(name, shape, submission)) for name in names}
        for name, vid in ids.items():
            if measurement in timing.get(vid, {}):
                median = timing[vid][measurement]["event_us"]["median"] / calls_per_invocation(vid)
                point["device_us"].setdefault(name, {})[l2] = median
                point["gbs"].setdefault(name, {})[l2] = stats.gigabytes_per_second(
                    logical_bytes_per_call(name, rows, cols), median)
        copies = [(point["device_us"][c][l2], c) for c in COPIES if l2 in point["device_us"].get(c, {})]
        if not copies:
            continue
        copy_us, ceiling = min(copies)
        point["ceiling"][l2] = {"name": ceiling, "us": copy_us}
        point["regime"][l2] = regime(copy_us)
        pairs = [(name, ceiling, f"{name}_over_copy") for name in FUSED]
        pairs += [(lib, "fused_plain", f"{lib}_over_fused_plain") for lib in LIBRARIES]
        pairs += [("fused_rms", "fused_plain", "fused_rms_over_fused_plain")]
        pairs += [(c, ceiling, f"{c}_over_ceiling") for c in COPIES if c != ceiling]
        for top, bottom, key in pairs:
            if l2 in point["device_us"].get(top, {}) and l2 in point["device_us"].get(bottom, {}):
                point["ratios"].setdefault(key, {})[l2] = call_ratio(grouped, ids[top], ids[bottom], measurement)
        if l2 in point["device_us"].get("fused_plain", {}):
            point["minus_copy_us"][l2] = point["device_us"]["fused_plain"][l2] - copy_us
            predicted = (plan.get("predicted_us") or {}).get(plan.get("tag", plan["design"]), {}).get(l2)
            if predicted is not None:
                point["predicted_us"][l2] = float(predicted)
    return point


def bootstrap(values, statistic, seed: int = SEED) -> dict:
    """{"value", "ci_low", "ci_high"}: the statistic of the values and its percentile bootstrap interval (the points
    resampled with replacement)."""
    array = np.asarray(values, dtype=np.float64)
    picks = np.random.default_rng(seed).integers(0, array.size, size=(RESAMPLES, array.size))
    low, high = np.percentile(statistic(array[picks], axis=1), [2.5, 97.5])
    return {"value": float(statistic(array)), "ci_low": float(low), "ci_high": float(high), "points": int(array.size)}


def geomean(values, axis=None):
    return np.exp(np.mean(np.log(values), axis=axis))


def p90(values, axis=None):
    return np.percentile(values, 90, axis=axis)


def extreme(pairs, pick=max) -> dict | None:
    """{"value", "shape"} of the largest (or smallest) (value, shape) pair; None where there is none."""
    return None if not pairs else dict(zip(("value", "shape"), pick(pairs)))


def ratio_statistics(points: list[dict], key: str, l2: str) -> dict:
    """Over the bandwidth-regime points: geomean and p90 of the ratio's medians (bootstrap intervals) over all of
    them, and its max over those outside the floor class."""
    chosen = [p for p in points if p["regime"].get(l2) == "bandwidth" and l2 in p["ratios"].get(key, {})]
    values = [p["ratios"][key][l2]["median"] for p in chosen]
    if not values:
        return {"points": 0}
    return {"points": len(values), "geomean": bootstrap(values, geomean), "p90": bootstrap(values, p90),
            "max": extreme([(p["ratios"][key][l2]["median"], p["shape"]) for p in chosen if not p["floor"]])}


def latency_statistics(points: list[dict], l2: str) -> dict:
    """Over the latency-regime points outside the floor class: fused plain − copy (µs), median and p90."""
    chosen = [p for p in points if p["regime"].get(l2) == "latency" and l2 in p["minus_copy_us"] and not p["floor"]]
    values = [p["minus_copy_us"][l2] for p in chosen]
    if not values:
        return {"points": 0}
    return {"points": len(values), "median": bootstrap(values, np.median), "p90": bootstrap(values, p90),
            "max": extreme([(p["minus_copy_us"][l2], p["shape"]) for p in chosen])}


def library_statistics(points: list[dict], lib: str, l2: str) -> dict:
    """Where the library ran: points where fused plain is faster (library ÷ fused plain's interval above 1), slower
    (below 1) or tied, the share faster, and the smallest library ÷ fused plain."""
    ratios = [(p["ratios"][f"{lib}_over_fused_plain"][l2], p["shape"]) for p in points
              if l2 in p["ratios"].get(f"{lib}_over_fused_plain", {})]
    if not ratios:
        return {"points": 0}
    counts = stats.tally(ratio for ratio, _ in ratios)
    return {"points": len(ratios), "fused_faster": counts["above"], "fused_slower": counts["below"],
            "ties": counts["tie"], "share": counts["above"] / len(ratios),
            "worst": extreme([(ratio["median"], shape) for ratio, shape in ratios], min)}


def model_statistics(points: list[dict], l2: str) -> dict:
    """|predicted ÷ measured − 1| of fused plain's device time where the plan predicted it: median, p90, worst."""
    errors = [(abs(p["predicted_us"][l2] / p["device_us"]["fused_plain"][l2] - 1), p["shape"]) for p in points
              if l2 in p["predicted_us"] and l2 in p["device_us"].get("fused_plain", {})]
    if not errors:
        return {"points": 0}
    values = [e for e, _ in errors]
    return {"points": len(values), "median": float(np.median(values)), "p90": float(p90(values)),
            "worst": extreme(errors)}


def copy_statistics(points: list[dict], l2: str) -> dict:
    """How often each copy was the ceiling, and the slower copy ÷ the ceiling (median, max) over the points."""
    found = {"ceiling": {c: sum(1 for p in points if p["ceiling"].get(l2, {}).get("name") == c) for c in COPIES}}
    slower = [(r[l2]["median"], p["shape"]) for p in points for key, r in p["ratios"].items()
              if key.endswith("_over_ceiling") and l2 in r]
    if slower:
        found["slower_over_ceiling"] = {"median": float(np.median([v for v, _ in slower])), "max": extreme(slower)}
    return found


def summarize_plane(grouped: dict, timing: dict, parameters, plans: dict, device: dict, baselines: dict) -> dict:
    """{"points": [...], "protocol_rounds", "<l2>": the statistics over the points in that L2 state}."""
    names = sweep_contenders(parameters, "plane")
    points = []
    for rows, cols in plane_shapes(parameters):
        shape = workloads.shape_name(rows, cols)
        unavailable = {lib: baselines.get(lib, {}).get("unavailable", {}).get(shape) for lib in LIBRARIES}
        points.append(point_summary(grouped, timing, names, rows, cols, plans[shape], device, unavailable))
    result = {"points": points, "rounds": parameters.plane_rounds}
    for l2 in L2_STATES:
        result[l2] = {"fused_plain_over_copy": ratio_statistics(points, "fused_plain_over_copy", l2),
                      "fused_rms_over_copy": ratio_statistics(points, "fused_rms_over_copy", l2),
                      "fused_plain_minus_copy_us": latency_statistics(points, l2),
                      "floor": {"points": sum(1 for p in points if p["floor"]),
                                "max": extreme([(p["ratios"]["fused_plain_over_copy"][l2]["median"], p["shape"])
                                                for p in points if p["floor"]
                                                and l2 in p["ratios"].get("fused_plain_over_copy", {})])},
                      "libraries": {lib: library_statistics(points, lib, l2) for lib in LIBRARIES},
                      "model": model_statistics(points, l2),
                      "copies": copy_statistics(points, l2),
                      "regimes": {name: sum(1 for p in points if p["regime"].get(l2) == name)
                                  for name in ("bandwidth", "latency")}}
    result["targets"] = targets(result)
    return result


def target_value(statistics: dict, key: str, which: str) -> tuple[float | None, str | None]:
    """(value, shape where it was reached, if one point) of a declared target's statistic in one L2 state."""
    if key.startswith("faster_than."):
        entry = statistics["libraries"][key.split(".")[1]]
        return (entry["share"], None) if entry["points"] else (None, None)
    if key.startswith("worst_library_ratio."):
        worst = statistics["libraries"][key.split(".")[1]].get("worst")
        return (worst["value"], worst["shape"]) if worst else (None, None)
    if key == "model":
        entry = statistics["model"]
        return (entry[which], None) if entry["points"] else (None, None)
    found = statistics[key].get(which)
    if not found:
        return None, None
    return found["value"], found.get("shape")


def targets(plane: dict) -> list[dict]:
    """The declared plane targets (PLANE_TARGETS) against this run, per L2 state: met, missed or not measured."""
    found = []
    for key, which, sense, threshold in PLANE_TARGETS:
        for l2 in L2_STATES:
            value, shape = target_value(plane[l2], key, which)
            met = None if value is None else bool(value <= threshold if sense == "at most" else value >= threshold)
            found.append({"key": key, "statistic": which, "sense": sense, "threshold": threshold, "l2": l2,
                          "measured": value, "shape": shape, "met": met})
    return found


def headline(plane: dict) -> dict:
    """The plane's headline keys (see the chapter's summary docstring); a figure this run has no value for is left
    out."""
    figures = {"plane.points": len(plane["points"]), "plane.floor.points": sum(1 for p in plane["points"] if p["floor"])}
    for l2 in L2_STATES:
        s = plane[l2]
        for key in ("fused_plain_over_copy", "fused_rms_over_copy"):
            for which in ("geomean", "p90", "max"):
                if s[key].get(which):
                    figures[f"plane.{key}.{which}.{l2}"] = s[key][which]["value"]
        for which in ("median", "p90"):
            if s["fused_plain_minus_copy_us"].get(which):
                figures[f"plane.fused_plain_minus_copy_us.{which}.{l2}"] = s["fused_plain_minus_copy_us"][which]["value"]
        if s["floor"]["max"]:
            figures[f"plane.floor.fused_plain_over_copy.max.{l2}"] = s["floor"]["max"]["value"]
        for lib, entry in s["libraries"].items():
            if entry["points"]:
                figures[f"plane.faster_than.{lib}.share.{l2}"] = entry["share"]
                figures[f"plane.worst_library_ratio.{lib}.{l2}"] = entry["worst"]["value"]
        for which in ("median", "p90"):
            if s["model"]["points"]:
                figures[f"plane.model_error.{which}.{l2}"] = s["model"][which]
    return figures
