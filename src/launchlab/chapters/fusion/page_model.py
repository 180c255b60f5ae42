"""The launch policy's cost model on the fusion page: where its predictions lean one way over the run's plane (by
design and regime), and what the policy's choice costs against the fastest offered build at each shape of the
calibration plane, where every build was timed (evidence/development/fused_cost_fit.json, which
tools/calibrate_fused.py --fit writes)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from launchlab.chapters.fusion import L2_STATES, PLANE_TARGETS
from launchlab.chapters.fusion.page_format import design_label, fmt, listing, percent, ratio_number
from launchlab.model import fused_cost
from launchlab.store.evidence import REPO_ROOT

FIT = REPO_ROOT / "evidence" / "development" / "fused_cost_fit.json"
# a design's median error in one regime is named where it goes past the model's declared goal
THRESHOLDS = {(key, which): threshold for key, which, _, threshold in PLANE_TARGETS}
LEAN = THRESHOLDS[("model", "median")]
GEOMEAN_TARGET = THRESHOLDS[("fused_plain_over_copy", "geomean")]
MIN_POINTS = 2   # a median of fewer points says nothing about a design


def leanings(plane: dict, l2: str) -> list[dict]:
    """Per design and regime with at least MIN_POINTS points: the median of predicted ÷ measured − 1 of fused
    plain's device time, where it lies beyond ±LEAN; the largest first."""
    groups: dict[tuple[str, str], list[float]] = {}
    for p in plane["points"]:
        predicted, measured = p["predicted_us"].get(l2), p["device_us"].get("fused_plain", {}).get(l2)
        if predicted and measured and p["regime"].get(l2):
            groups.setdefault((p["design"], p["regime"][l2]), []).append(predicted / measured - 1.0)
    found = [{"design": design, "regime": regime, "points": len(errors), "median": float(np.median(errors))}
             for (design, regime), errors in groups.items() if len(errors) >= MIN_POINTS]
    return sorted((f for f in found if abs(f["median"]) > LEAN), key=lambda f: -abs(f["median"]))


def _leaning_sentence(l2: str, found: list[dict]) -> str:
    """One L2 state's leanings, grouped by direction and regime: "Warm, it overestimated the time of A by a median
    of 62 % (2 points) and of B by 19 % (7 points) in the bandwidth regime, and underestimated that of C ..."."""
    if not found:
        return f"{l2.capitalize()}, no design's median error in either regime went past {percent(LEAN)}."
    clauses: dict[tuple[str, str], list[dict]] = {}
    for f in found:
        clauses.setdefault(("overestimated" if f["median"] > 0 else "underestimated", f["regime"]), []).append(f)
    words = []
    for (way, regime), group in clauses.items():
        items = [f"{'the time' if not words else 'that'} of {design_label(group[0]['design'])} by a median of "
                 f"{percent(abs(group[0]['median']))} ({group[0]['points']} points)"]
        items += [f"of {design_label(f['design'])} by {percent(abs(f['median']))} ({f['points']} points)"
                  for f in group[1:]]
        words.append(f"{way} {listing(items)} in the {regime} regime")
    return f"{l2.capitalize()}, it {', and '.join(words)}."


def leaning_text(plane: dict) -> str:
    """Where the model's errors lean one way, warm and cold, in sentences."""
    if not plane.get("points"):
        return "This run has no plane to compare the model with."
    return " ".join(["Its errors lean one way for some designs."]
                    + [_leaning_sentence(l2, leanings(plane, l2)) for l2 in L2_STATES]
                    + [f"Every other design with {MIN_POINTS} points or more in a regime stayed within "
                       f"{percent(LEAN)} there at its median."])


def load_fit(path: Path = FIT) -> dict:
    """The fit file, checked to be the fit of the constants the policy uses; a clear error where it is not."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: the cost model's fit is missing (tools/calibrate_fused.py --fit writes it)")
    fit = json.loads(path.read_text())
    calibration = fit.get("calibration_sha256_12")
    if not calibration or not fused_cost.MODEL_VERSION.endswith(calibration):
        raise ValueError(f"{path}: fitted on calibration {calibration!r}, but the policy's model is "
                         f"{fused_cost.MODEL_VERSION!r}")
    for l2 in L2_STATES:
        for which in ("pick", "offered"):
            if not fit.get("calibration_plane", {}).get(l2, {}).get(which):
                raise ValueError(f"{path}: no calibration-plane figures for the {which} ({l2} L2)")
    return fit


def choice_values(path: Path = FIT) -> dict:
    """Glued strings: the calibration plane's size and, warm and cold, its bandwidth regime's geometric mean of the
    policy's picks over the copy beside the fastest offered build's, the latency regime's median time over the copy
    of each, and what the fastest builds say of the geometric-mean target."""
    fit = load_fit(path)
    plane = fit["calibration_plane"]
    values = {"calibration_points": str(plane[L2_STATES[0]]["points"])}
    for l2 in L2_STATES:
        pick, best = plane[l2]["pick"], plane[l2]["offered"]
        values[f"calibration_pick_geomean_{l2}"] = ratio_number(pick["geomean"])
        values[f"calibration_best_geomean_{l2}"] = ratio_number(best["geomean"])
        values[f"calibration_pick_latency_{l2}"] = fmt(pick["latency_over_median_us"], 2)
        values[f"calibration_best_latency_{l2}"] = fmt(best["latency_over_median_us"], 2)
    above = [l2 for l2 in L2_STATES if plane[l2]["offered"]["geomean"] > GEOMEAN_TARGET]
    values["calibration_best_verdict"] = (
        f"so even the best choice among these builds would miss the chapter's geometric-mean target of "
        f"{GEOMEAN_TARGET:g} there, {listing(above)}" if above else
        f"so the best choice among these builds would meet the chapter's geometric-mean target of "
        f"{GEOMEAN_TARGET:g} there, warm and cold")
    return values
