"""CPU: tools/dev_rank_fit.py, the cross-validated fit on the candidates' order: its picks are the policy's, its
regret is zero where the model's pick is the fastest, and its refit keeps the memory system's constants."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from launchlab.model import fused_cost

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import dev_rank_fit  # noqa: E402
import fused_fit  # noqa: E402

CALIBRATION = ROOT / "evidence/development/fused_calibration_thin_builds.json.gz"


@pytest.fixture(scope="module")
def calibration():
    return fused_fit.load_calibration(CALIBRATION)


def test_its_picks_and_figures_are_the_reports(calibration):
    """On the committed fit report's plane, the pick's figures with FITTED equal fused_cost_fit.json's."""
    report = json.loads((ROOT / "evidence/development/fused_cost_fit.json").read_text())
    assert report["calibration_plane_file"] == CALIBRATION.name
    reported = report["calibration_plane"]
    figures = dev_rank_fit.Shapes(calibration["shapes"], calibration["device"]).figures(fused_cost.FITTED)
    for l2 in ("warm", "cold"):
        assert figures[l2]["geomean"] == pytest.approx(reported[l2]["pick"]["geomean"], rel=1e-9)
        assert figures[l2]["latency_median_us"] == pytest.approx(reported[l2]["pick"]["latency_over_median_us"])


def test_the_regret_is_that_of_the_pick_and_the_softmin_tends_to_the_tied_candidates(calibration):
    """The hard regret is the policy's pick's; the softmin's, at a tiny temperature, the mean over the candidates
    whose scores tie for the least, and at a huge one the mean over every candidate."""
    rng = np.random.default_rng()
    records = [calibration["shapes"][k] for k in rng.choice(len(calibration["shapes"]), 12, replace=False)]
    shapes = dev_rank_fit.Shapes(records, calibration["device"])
    scores, picks = shapes.scores(fused_cost.FITTED), shapes.picks(fused_cost.FITTED)
    assert shapes.regret(fused_cost.FITTED) == pytest.approx(np.mean([g["regret"][k] for g, k in
                                                                      zip(shapes.groups, picks)]))
    tied = [g["regret"][s <= s.min() + 1e-12].mean() for g, s in zip(shapes.groups, scores)]
    assert shapes.regret(fused_cost.FITTED, tau=1e-8) == pytest.approx(np.mean(tied), abs=1e-6)
    flat = np.mean([g["regret"].mean() for g in shapes.groups])
    assert shapes.regret(fused_cost.FITTED, tau=1e6) == pytest.approx(flat, rel=1e-4)
    for group, k, score in zip(shapes.groups, picks, scores):
        assert group["regret"].min() >= 0.0  # the fastest warm and the fastest cold may differ
        assert score[k] <= score.min() + 1e-9


def test_the_refit_moves_only_the_designs_constants(calibration):
    records = calibration["shapes"][:6]
    kept = {(r["rows"], r["cols"]) for r in records}
    observed = [o for o in fused_fit.observations(calibration) if (o[1], o[2]) in kept]
    shapes = dev_rank_fit.Shapes(records, calibration["device"])
    fitted = dev_rank_fit.refit(shapes, observed, calibration["device"], weight=10.0, tau=0.01, steps=3)
    moved = {name for name in fused_cost.Constants.names()
             if getattr(fitted, name) != pytest.approx(getattr(fused_cost.FITTED, name), rel=1e-12)}
    assert moved and not moved & set(fused_cost.MEMORY_CONSTANTS)
