"""The cost model's fit on a calibration file made by tools/calibrate_fused.py (CPU only): the observations it
holds, the least-squares fit (model/fused_cost.fit), the model's errors, the policy as a table and the plane's
figures for the policy's picks against the fastest candidate measured. tools/calibrate_fused.py --fit and --report
call these; tests/test_fused_cost.py refits the committed calibration with them."""
from __future__ import annotations

import dataclasses
import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.chapters.fusion import plans  # noqa: E402
from launchlab.chapters.fusion.plane import BANDWIDTH_COPY_US  # noqa: E402


def median(values) -> float:
    return float(statistics.median(values))


def copy_plan() -> dict:
    return {"design": "copy", "defines": {}, "tag": "copy"}


def identity(plan: dict) -> tuple:
    """What makes a configuration itself (its tag is only its name): design, build, tier and launch options."""
    return plan["design"], plan["module"], plan.get("tier"), json.dumps(plan.get("options") or {}, sort_keys=True)


def observations(calibration: dict, modes=("plain", "rms")) -> list[tuple]:
    """[(plan, rows, cols, l2, median us)] of every configuration validated and timed, and of the copy kernel:
    each configuration's plan as plans.candidates makes it now, every build included (matched by design, build, tier
    and options)."""
    device = calibration["device"]
    found = []
    for record in calibration["shapes"]:
        rows, cols = record["rows"], record["cols"]
        current = {identity(plan): plan for plan in plans.candidates(rows, cols, device, every_build=True)}
        for l2 in ("warm", "cold"):
            found.append((copy_plan(), rows, cols, l2, median(record["copy"]["vector"][l2])))
        for entry in record["fused"]:
            plan = current.get(identity(entry))
            if plan is None or not entry.get("valid") or entry["mode"] not in modes:
                continue
            for l2 in ("warm", "cold"):
                found.append((plan, rows, cols, l2, median(entry[l2])))
    return found


def calibration_bytes(calibration_path: Path) -> bytes:
    """A calibration file's JSON text as bytes; a file stored gzipped (name ending .gz) is decompressed, so that its
    identity does not depend on how it is stored."""
    data = Path(calibration_path).read_bytes()
    return gzip.decompress(data) if str(calibration_path).endswith(".gz") else data


def load_calibration(calibration_path: Path) -> dict:
    return json.loads(calibration_bytes(calibration_path))


def version_of(calibration_path: Path) -> str:
    """The calibration's identity in the model's version: the first 12 hex digits of the SHA-256 of its JSON."""
    import hashlib

    return hashlib.sha256(calibration_bytes(calibration_path)).hexdigest()[:12]


def fit_file(calibration_path: Path) -> dict:
    """The model's constants fitted on a calibration file, with its errors per design and L2 state."""
    import numpy as np

    from launchlab.model import fused_cost

    calibration = load_calibration(calibration_path)
    observed = observations(calibration)
    constants, overall = fused_cost.fit(observed, calibration["device"])
    predicted = np.array([fused_cost.predict(p, r, c, calibration["device"], l2, constants) for p, r, c, l2, _ in observed])
    relative = predicted / np.array([us for *_, us in observed]) - 1.0
    groups = {}
    for (plan, _, _, l2, _), error in zip(observed, relative):
        groups.setdefault(f"{plan['design']}.{l2}", []).append(error)
    return {"constants": dataclasses.asdict(constants), "errors": overall,
            "errors_by_design": {k: fused_cost.errors(np.array(v)) for k, v in sorted(groups.items())},
            "calibration": calibration_path.name, "calibration_sha256_12": version_of(calibration_path),
            "points": len(calibration["shapes"])}


def report(calibration_path: Path, constants=None) -> dict:
    """Per shape of a calibration file: the copy ceiling, the fastest configuration measured and the model's pick
    (plain mode), warm and cold; then the plane's figures for the pick, for the fastest candidate the policy offers
    ("offered") and for the fastest of every build timed ("best": with the builds only the calibration times, what
    offering them could gain), in the bandwidth regime as ratios to the copy and in the latency regime as time over
    the copy; and, where the calibration timed libraries, how the pick and the fastest stand against each
    (`library_figures`)."""
    import numpy as np

    from launchlab.model import fused_cost

    calibration = load_calibration(calibration_path)
    device = calibration["device"]
    constants = constants or fused_cost.FITTED
    figures = {l2: {"pick": [], "offered": [], "best": [], "copy": [], "model_error": [], "libraries": {}}
               for l2 in ("warm", "cold")}
    print(f"{'shape':>16} {'l2':>5} {'copy':>9} {'best':>9} {'':>5} {'pick':>9} {'':>5} {'pred':>9}  best / pick")
    for record in calibration["shapes"]:
        rows, cols = record["rows"], record["cols"]
        measured = {e["tag"]: e for e in record["fused"] if e["mode"] == "plain" and e.get("valid")}
        if not measured:
            continue
        candidates = plans.predictions(rows, cols, device, constants)
        scored = [(plans.score(predicted), plan["tag"], predicted) for plan, predicted in candidates]
        _, pick, predicted = scored[plans.pick(rows, cols, device, candidates, constants)]
        offered = {tag for _, tag, _ in scored}
        for l2 in ("warm", "cold"):
            copy = min(median(record["copy"][k][l2]) for k in record["copy"])
            times = {tag: median(e[l2]) for tag, e in measured.items()}
            best = min(times, key=times.get)
            picked = times.get(pick, float("nan"))
            fastest_offered = min((us for tag, us in times.items() if tag in offered), default=float("nan"))
            for key, value in (("pick", picked), ("offered", fastest_offered), ("best", times[best]), ("copy", copy)):
                figures[l2][key].append(value)
            for name, library in record.get("libraries", {}).items():
                if library.get(l2) and library.get("valid_after"):
                    figures[l2]["libraries"].setdefault(name, []).append((median(library[l2]), picked, times[best]))
            figures[l2]["model_error"] += [each[l2] / times[tag] - 1 for _, tag, each in scored if tag in times]
            print(f"{rows:>7}x{cols:<8} {l2:>5} {copy:9.2f} {times[best]:9.2f} {times[best] / copy:5.2f} {picked:9.2f} "
                  f"{picked / copy:5.2f} {predicted[l2]:9.2f}  {best} / {pick}")
    summary = {}
    for l2, f in figures.items():
        pick, offered, best, copy = (np.array(f[k]) for k in ("pick", "offered", "best", "copy"))
        bandwidth, latency = copy >= BANDWIDTH_COPY_US, copy < BANDWIDTH_COPY_US
        summary[l2] = {"points": int(copy.size), "bandwidth_points": int(bandwidth.sum()),
                       "model_error": fused_cost.errors(np.array(f["model_error"]))}
        for name, times in (("pick", pick), ("offered", offered), ("best", best)):
            ratio = times[bandwidth] / copy[bandwidth]
            over = times[latency] - copy[latency]
            summary[l2][name] = {"geomean": float(np.exp(np.nanmean(np.log(ratio)))) if ratio.size else None,
                                 "p90": float(np.nanpercentile(ratio, 90)) if ratio.size else None,
                                 "max": float(np.nanmax(ratio)) if ratio.size else None,
                                 "latency_over_median_us": float(np.nanmedian(over)) if over.size else None,
                                 "latency_over_p90_us": float(np.nanpercentile(over, 90)) if over.size else None}
        summary[l2]["pick_over_best"] = {"median": float(np.nanmedian(pick / best)), "max": float(np.nanmax(pick / best))}
        if f["libraries"]:
            summary[l2]["libraries"] = library_figures(f["libraries"])
    print(json.dumps(summary, indent=1))
    return summary


def library_figures(timed: dict) -> dict:
    """{library: {"points", "pick_faster", "best_faster" (shares of the points where the pick, or the fastest
    candidate, took less time than the library), "worst_over_pick", "worst_over_best" (the smallest library time
    over theirs)}} from {library: [(library us, pick us, fastest us)]}. Medians of a few rounds, no intervals: a
    development figure, not the chapter's."""
    import numpy as np

    found = {}
    for name, rows in sorted(timed.items()):
        library, pick, best = (np.array(column, dtype=float) for column in zip(*rows))
        found[name] = {"points": int(library.size), "pick_faster": float(np.mean(pick < library)),
                       "best_faster": float(np.mean(best < library)),
                       "worst_over_pick": float(np.nanmin(library / pick)),
                       "worst_over_best": float(np.nanmin(library / best))}
    return found


def policy_table(device: dict, constants=None, points: int = 400, seed: int = 1) -> list[dict]:
    """Which design the policy picks where, on `points` shapes of the plane's distribution (a seed of neither the
    calibration nor the chapter), and why: per design, the rows and row lengths it serves, and the term of the
    model (fused_cost.TERMS) by which the best other design loses most often, warm and cold summed."""
    import collections

    from launchlab.model import fused_cost

    constants = constants or fused_cost.FITTED
    served = {}
    for rows, cols in fused_cost.draw_plane(seed, points):
        scored = []
        for plan in plans.candidates(rows, cols, device):
            per_state = {l2: fused_cost.predict_terms(plan, rows, cols, device, l2, constants)
                         for l2 in fused_cost.L2_STATES}
            scored.append((plans.score({l2: t["total"] for l2, t in per_state.items()}), plan, per_state))
        chosen = plans.pick(rows, cols, device, [(plan, {l2: t["total"] for l2, t in per_state.items()})
                                                 for _, plan, per_state in scored], constants)
        pick = scored[chosen]
        scored.sort(key=lambda item: item[0])
        other = next((item for item in scored if item[1]["design"] != pick[1]["design"]), None)
        entry = served.setdefault(pick[1]["design"], {"rows": [], "cols": [], "reasons": collections.Counter(),
                                                      "tags": collections.Counter()})
        entry["rows"].append(rows)
        entry["cols"].append(cols)
        entry["tags"][pick[1]["tag"]] += 1
        if other:
            gaps = {name: sum(other[2][l2][name] - pick[2][l2][name] for l2 in fused_cost.L2_STATES)
                    for name in fused_cost.TERMS}
            entry["reasons"][f"{other[1]['design']} loses on {max(gaps, key=gaps.get)}"] += 1
    table = []
    for design, entry in sorted(served.items(), key=lambda item: -len(item[1]["rows"])):
        table.append({"design": design, "shapes": len(entry["rows"]),
                      "rows": [min(entry["rows"]), max(entry["rows"])], "cols": [min(entry["cols"]), max(entry["cols"])],
                      "configurations": dict(entry["tags"].most_common(4)),
                      "reasons": dict(entry["reasons"].most_common(3))})
    return table


ON_CHIP_BYTES_PER_SM = 65536 * 4  # an SM's registers, beside its shared memory (the floor class below)


def floor_class(rows: int, cols: int, device: dict) -> bool:
    """The issue's floor class: one or two rows of at least 4 MiB, or fewer rows than SMs holding more than the GPU's
    registers and shared memory."""
    on_chip = int(device["sm_count"]) * (ON_CHIP_BYTES_PER_SM + int(device.get("shared_bytes_per_sm", 233472)))
    return (rows <= 2 and 4 * cols >= 4 << 20) or (rows < int(device["sm_count"]) and 4 * rows * cols > on_chip)


def heldout_summary(path: Path) -> dict:
    """A --picks-only file: per L2 state, the model's error on the picks (their predictions were made before the
    measurement), and plain mode's figures against the copy ceiling (the faster of cudaMemcpyAsync and the copy
    kernel): bandwidth regime (copy >= 10 us, floor class apart) ratio geomean, p90, max; latency regime fused - copy
    median and p90; the floor class's worst ratio."""
    import numpy as np

    from launchlab.model import fused_cost

    held = load_calibration(path)
    device = held["device"]
    out = {"points": len(held["shapes"]), "plane_seed": held.get("plane_seed")}
    for l2 in fused_cost.L2_STATES:
        errors, ratio, over, floor, designs = [], [], [], [], {}
        for record in held["shapes"]:
            rows, cols = record["rows"], record["cols"]
            copy = min(median(record["copy"][k][l2]) for k in record["copy"])
            for entry in record["fused"]:
                if not entry.get("valid") or l2 not in entry:
                    continue
                measured = median(entry[l2])
                errors.append(entry["predicted_us"][l2] / measured - 1.0)
                if entry["mode"] != "plain":
                    continue
                designs[entry["design"]] = designs.get(entry["design"], 0) + 1
                if floor_class(rows, cols, device):
                    floor.append(measured / copy)
                elif copy >= BANDWIDTH_COPY_US:
                    ratio.append(measured / copy)
                else:
                    over.append(measured - copy)
        ratio, over = np.array(ratio), np.array(over)
        out[l2] = {"model_error": fused_cost.errors(np.array(errors)), "designs": designs,
                   "bandwidth": {"points": int(ratio.size), "geomean": float(np.exp(np.log(ratio).mean())) if ratio.size else None,
                                 "p90": float(np.percentile(ratio, 90)) if ratio.size else None,
                                 "max": float(ratio.max()) if ratio.size else None},
                   "latency_minus_copy_us": {"points": int(over.size), "median": float(np.median(over)) if over.size else None,
                                             "p90": float(np.percentile(over, 90)) if over.size else None},
                   "floor": {"points": len(floor), "max": max(floor) if floor else None}}
    return out
