"""The fusion page's account of its cost model (chapters/fusion/page_model.py): where the predictions lean one way
over a plane, computed from random points, and the calibration plane's cost of the policy's choice, from the
committed fit file and from broken copies of it."""
import json
import re

import numpy as np
import pytest

from launchlab.chapters.fusion import page_model
from launchlab.chapters.fusion.page_format import design_label
from launchlab.model import fused_cost


def _point(design: str, regimes: dict, errors: dict, rng) -> dict:
    measured = {l2: float(rng.uniform(1.0, 500.0)) for l2 in regimes}
    return {"design": design, "regime": regimes, "device_us": {"fused_plain": measured},
            "predicted_us": {l2: measured[l2] * (1.0 + errors[l2]) for l2 in regimes}}


def _random_plane(seed: int):
    """Points of random designs, regimes and errors; returns the plane and the expected medians per group."""
    rng = np.random.default_rng(seed)
    points, groups = [], {}
    for _ in range(int(rng.integers(20, 60))):
        design = str(rng.choice(["row", "narrow", "cluster", "split"]))
        regimes = {l2: str(rng.choice(["bandwidth", "latency"])) for l2 in ("warm", "cold")}
        lean = {(design, "bandwidth"): 0.3, (design, "latency"): -0.2}
        errors = {l2: float(rng.normal(lean[(design, regimes[l2])] * (design in ("row", "split")), 0.05))
                  for l2 in regimes}
        points.append(_point(design, regimes, errors, rng))
        for l2 in regimes:
            groups.setdefault((l2, design, regimes[l2]), []).append(errors[l2])
    return {"points": points}, groups


@pytest.mark.parametrize("seed", np.random.SeedSequence().generate_state(3))
def test_leanings_are_the_groups_whose_median_error_passes_the_goal(seed):
    plane, groups = _random_plane(int(seed))
    for l2 in ("warm", "cold"):
        expected = {(d, r): float(np.median(e)) for (state, d, r), e in groups.items()
                    if state == l2 and len(e) >= page_model.MIN_POINTS and abs(np.median(e)) > page_model.LEAN}
        found = page_model.leanings(plane, l2)
        assert {(f["design"], f["regime"]): f["median"] for f in found} == pytest.approx(expected)
        assert [abs(f["median"]) for f in found] == sorted((abs(f["median"]) for f in found), reverse=True)
        assert all(f["points"] == len(groups[(l2, f["design"], f["regime"])]) for f in found)


def test_leanings_leave_out_groups_of_one_point_and_points_without_a_prediction():
    rng = np.random.default_rng(7)
    plane = {"points": [_point("row", {"warm": "bandwidth"}, {"warm": 0.5}, rng),
                        _point("split", {"warm": "latency"}, {"warm": -0.4}, rng),
                        _point("split", {"warm": "latency"}, {"warm": -0.3}, rng),
                        {**_point("split", {"warm": "latency"}, {"warm": 0.9}, rng), "predicted_us": {}}]}
    assert page_model.leanings(plane, "warm") == [
        {"design": "split", "regime": "latency", "points": 2, "median": pytest.approx(-0.35)}]
    assert page_model.leanings(plane, "cold") == []


def test_the_leaning_sentences_name_direction_size_and_regime():
    rng = np.random.default_rng(11)
    both = {"warm": "bandwidth", "cold": "bandwidth"}
    plane = {"points": [_point("row", both, {"warm": 0.2, "cold": 0.02}, rng) for _ in range(3)]
             + [_point("narrow", both, {"warm": 0.6, "cold": 0.01}, rng) for _ in range(2)]
             + [_point("split", {"warm": "latency", "cold": "latency"}, {"warm": -0.12, "cold": 0.0}, rng)
                for _ in range(4)]}
    text = page_model.leaning_text(plane)
    assert (f"Warm, it overestimated the time of {design_label('narrow')} by a median of 60\u00a0% (2 points) and of "
            f"{design_label('row')} by 20\u00a0% (3 points) in the bandwidth regime, and underestimated that of "
            f"{design_label('split')} by a median of 12\u00a0% (4 points) in the latency regime.") in text
    assert "Cold, no design's median error in either regime went past 10\u00a0%." in text
    assert text.endswith("at its median.")
    assert page_model.leaning_text({"points": []}) == "This run has no plane to compare the model with."


def _fit_copy(tmp_path, change) -> str:
    fit = json.loads(page_model.FIT.read_text())
    change(fit)
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(fit))
    return path


def test_choice_values_come_from_the_committed_fit_of_the_policys_model():
    fit = json.loads(page_model.FIT.read_text())
    assert fused_cost.MODEL_VERSION.endswith(fit["calibration_sha256_12"])
    values = page_model.choice_values()
    plane = fit["calibration_plane"]
    assert values["calibration_points"] == str(plane["warm"]["points"])
    for l2 in ("warm", "cold"):
        assert float(values[f"calibration_pick_geomean_{l2}"]) == pytest.approx(plane[l2]["pick"]["geomean"], abs=5e-3)
        assert float(values[f"calibration_best_geomean_{l2}"]) == pytest.approx(plane[l2]["offered"]["geomean"],
                                                                                abs=5e-3)
        assert float(values[f"calibration_pick_latency_{l2}"]) == pytest.approx(
            plane[l2]["pick"]["latency_over_median_us"], abs=5e-3)


@pytest.mark.parametrize("best, says", [(1.02, "would meet"), (1.2, "would miss")])
def test_the_verdict_follows_the_fastest_builds_against_the_target(tmp_path, best, says):
    def change(fit):
        for l2 in ("warm", "cold"):
            fit["calibration_plane"][l2]["offered"]["geomean"] = best

    values = page_model.choice_values(_fit_copy(tmp_path, change))
    assert says in values["calibration_best_verdict"]
    assert f"{page_model.GEOMEAN_TARGET:g}" in values["calibration_best_verdict"]


def test_a_fit_of_other_constants_or_without_figures_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="fused_cost_fit|calibrate_fused"):
        page_model.load_fit(tmp_path / "missing.json")
    other = _fit_copy(tmp_path, lambda fit: fit.update(calibration_sha256_12="000000000000"))
    with pytest.raises(ValueError, match=re.escape(fused_cost.MODEL_VERSION)):
        page_model.load_fit(other)
    bare = _fit_copy(tmp_path, lambda fit: fit["calibration_plane"]["cold"].pop("pick"))
    with pytest.raises(ValueError, match="pick.*cold"):
        page_model.load_fit(bare)
