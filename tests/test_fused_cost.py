"""CPU: the fused cost model (model/fused_cost.py) and the launch policy derived from it (chapters/fusion/plans.py):
the calibration plane's distribution, the model's sanity (monotone in bytes, L2 states, occupancy), the fit
recovering known constants and reproducing the committed constants from the committed calibration file, and the
policy choosing the candidate of least prediction."""
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from launchlab.chapters.fusion import plans
from launchlab.model import fused_cost

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import fused_fit  # noqa: E402

H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448,
        "shared_bytes_per_sm": 233472, "l2_bytes": 62914560}
EDGES = [(1, 1), (1, 2), (1, 1 << 21), (65536, 1), (3, 1 << 21), (7, 3), (257, 1025), (33, 99999), (4099, 17),
         (64, 1 << 22)]
CALIBRATION = ROOT / "evidence/development/fused_calibration.json.gz"
COPY = {"design": "copy", "defines": {}}
CLUSTER16 = {"design": "cluster", "defines": {"BLOCK": 256, "CLUSTER": 16, "SLICE_REGS": 8, "UNROLL": 4}}


def test_plane_draws_follow_the_distribution_and_the_seed():
    shapes = fused_cost.draw_plane(123, 200)
    assert shapes == fused_cost.draw_plane(123, 200) != fused_cost.draw_plane(124, 200)
    assert len(set(shapes)) == 200
    for rows, cols in shapes:
        assert 1 <= rows <= fused_cost.MAX_ROWS and 1 <= cols <= fused_cost.MAX_COLS
        assert fused_cost.MIN_BYTES <= 4 * rows * cols <= fused_cost.MAX_BYTES
    logs = np.log2([rows for rows, _ in shapes])
    assert logs.min() < 2 and logs.max() > 14   # spread over the whole log range, not bunched


def test_the_calibration_plane_is_not_the_chapters():
    from launchlab.chapters import fusion

    seed = getattr(fusion.Parameters(), "plane_seed", None)
    assert seed != fused_cost.CALIBRATION_SEED


def test_resident_blocks_follow_each_limit():
    assert fused_cost.resident_blocks(256, 32, 0, 233472) == 8                 # threads
    assert fused_cost.resident_blocks(32, 32, 0, 233472) == 32                 # blocks
    assert fused_cost.resident_blocks(256, 64, 0, 233472) == 4                 # registers
    assert fused_cost.resident_blocks(256, 32, 100 * 1024, 233472) == 2        # shared memory
    assert fused_cost.resident_blocks(1024, 255, 0, 233472) == 0               # does not fit at all


def test_cluster_grids_use_only_the_sms_whole_clusters_fill():
    # the H200's occupancy API at one block an SM: 66, 30, 15 and 7 clusters of 2, 4, 8 and 16 blocks
    assert [fused_cost.cluster_sms(w, 132) for w in (1, 2, 4, 8, 16)] == [132, 132, 120, 120, 112]
    assert fused_cost.cluster_sms(16, 16) == 16       # a cluster always gets its own blocks' SMs
    assert fused_cost.cluster_sms(8, 66) % 8 == 0    # whole clusters on a smaller GPU
    geometry = fused_cost.geometry(CLUSTER16, 8, 300_000, H200)  # slices of 4688 chunks, in shared memory
    assert geometry.sms == 112
    assert geometry.slots == 112 * fused_cost.resident_blocks(256, 64, 16 * 4688, 233472) == 112 * 3
    # slices in shared memory are read through a loop of UNROLL chunks a thread: constants of their own
    assert geometry.design == "cluster_shared" and fused_cost.geometry(CLUSTER16, 8, 30_000, H200).design == "cluster"


def test_a_cluster_past_the_usable_sms_doubles_up_blocks():
    """Seven clusters of 16 blocks of shared-memory slices (one block an SM) fill the 112 usable SMs; an eighth puts
    two blocks on some SMs and its wave's time per SM doubles: the jump comes from 7 to 8 rows, not from 8 to 9
    (where it would be if all 132 SMs took clusters)."""
    cols = 16 * 4 * (150 * 1024 // 16)  # slices of 150 KiB in shared memory: one block an SM
    for l2 in fused_cost.L2_STATES:
        times = [fused_cost.predict(CLUSTER16, rows, cols, H200, l2, fused_cost.FITTED) for rows in (6, 7, 8, 9)]
        assert times[2] - times[1] > 2 * max(times[1] - times[0], times[3] - times[2]), (l2, times)


@pytest.mark.parametrize("rows", [1, 100, 5000])
def test_more_bytes_never_take_less_time(rows):
    for l2 in fused_cost.L2_STATES:
        previous = 0.0
        for cols in (64, 1024, 16384, 50000):
            if 4 * rows * cols > fused_cost.MAX_BYTES:
                continue
            best = min(fused_cost.predict(p, rows, cols, H200, l2, fused_cost.FITTED)
                       for p in plans.candidates(rows, cols, H200))
            assert best >= previous * 0.999, (rows, cols, l2)
            previous = best


def test_cold_is_never_faster_than_warm_where_x_and_y_fit_the_l2():
    # past the L2, warm calls evict the last call's dirty y while cold ones start from clean lines: no rule there
    for rows, cols in [(r, c) for r, c in fused_cost.draw_plane(7, 80) if 8 * r * c <= H200["l2_bytes"] // 2]:
        for plan in plans.candidates(rows, cols, H200) + [COPY]:
            warm = fused_cost.predict(plan, rows, cols, H200, "warm", fused_cost.FITTED)
            cold = fused_cost.predict(plan, rows, cols, H200, "cold", fused_cost.FITTED)
            assert cold >= warm * 0.999, (rows, cols, plan.get("tag"))


def test_a_larger_gpu_is_never_slower():
    bigger = H200 | {"sm_count": 2 * H200["sm_count"]}
    for rows, cols in [(64, 65536), (4096, 4096), (1, 1 << 20), (30000, 100)]:
        for plan in plans.candidates(rows, cols, H200):
            for l2 in fused_cost.L2_STATES:
                assert (fused_cost.predict(plan, rows, cols, bigger, l2, fused_cost.FITTED)
                        <= fused_cost.predict(plan, rows, cols, H200, l2, fused_cost.FITTED) * 1.001)


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="unknown design"):
        fused_cost.geometry({"design": "magic", "defines": {}}, 4, 4, H200)
    with pytest.raises(ValueError, match="L2 state"):
        fused_cost.predict(COPY, 4, 4, H200, "lukewarm", fused_cost.FITTED)
    with pytest.raises(ValueError, match="empty"):
        plans.candidates(0, 4, H200)


def synthetic(constants, shapes, noise=0.02):
    rng = np.random.default_rng(5)
    found = []
    for rows, cols in shapes:
        for plan in plans.candidates(rows, cols, H200) + [COPY]:
            for l2 in fused_cost.L2_STATES:
                us = fused_cost.predict(plan, rows, cols, H200, l2, constants) * np.exp(rng.normal(0.0, noise))
                found.append((plan, rows, cols, l2, us))
    return found


def test_the_fit_recovers_known_constants():
    true = dataclasses.replace(fused_cost.Constants(), launch=1.3, latency=0.7, dram=4.2e6, per_sm=9e4, sync=0.15,
                               cluster_sync=0.6, l2_effective=42e6)
    fitted, errors = fused_cost.fit(synthetic(true, fused_cost.draw_plane(11, 60)), H200)
    assert errors["median"] < 0.03
    # a copy's fixed cost is launch + latency: the copy alone tells the sum, not the parts
    assert fitted.launch + fitted.latency == pytest.approx(true.launch + true.latency, rel=0.05)
    for name in ("dram", "l2_effective", "per_sm"):
        assert getattr(fitted, name) == pytest.approx(getattr(true, name), rel=0.1), name


def test_the_policy_picks_the_least_prediction_with_every_candidates_prediction():
    for rows, cols in fused_cost.draw_plane(99, 40) + EDGES:
        plan = plans.fused_plan(rows, cols, H200)
        considered = plans.candidates(rows, cols, H200)
        assert set(plan["predicted_us"]) == {p["tag"] for p in considered}
        scores = {tag: plans.score(times) for tag, times in plan["predicted_us"].items()}
        assert scores[plan["tag"]] == min(scores.values())
        assert plan["model"] == fused_cost.MODEL_VERSION
        for tag, times in plan["predicted_us"].items():
            assert set(times) == {"warm", "cold"} and all(t > 0 for t in times.values())


def test_the_committed_constants_refit_from_the_committed_calibration():
    calibration = fused_fit.load_calibration(CALIBRATION)
    assert calibration["plane_seed"] == fused_cost.CALIBRATION_SEED
    fitted = fused_fit.fit_file(CALIBRATION)
    for name, value in fitted["constants"].items():
        assert getattr(fused_cost.FITTED, name) == pytest.approx(value, rel=1e-3), name
    assert fused_cost.MODEL_VERSION.endswith(fused_fit.version_of(CALIBRATION))


def test_the_committed_heldout_check_gives_the_figures_fused_cost_md_states():
    """The held-out check's column of evidence/development/fused_cost.md (warm / cold), from its file."""
    held = fused_fit.heldout_summary(ROOT / "evidence/development/fused_heldout.json.gz")
    assert held["points"] == 100 and held["plane_seed"] == 777
    stated = {"warm": (0.062, 1.13, 1.30, 1.37, 0.48, 2.1, 1.25), "cold": (0.088, 1.14, 1.32, 1.39, 0.51, 2.2, 1.28)}
    for l2, (error, geomean, p90, worst, median, tail, floor) in stated.items():
        figures = held[l2]
        assert figures["model_error"]["median"] == pytest.approx(error, abs=0.0005)
        assert [round(figures["bandwidth"][k], 2) for k in ("geomean", "p90", "max")] == [geomean, p90, worst]
        assert round(figures["latency_minus_copy_us"]["median"], 2) == median
        assert round(figures["latency_minus_copy_us"]["p90"], 1) == tail
        assert round(figures["floor"]["max"], 2) == floor
        assert figures["designs"] == {"row": 47, "narrow": 26, "split": 8, "cluster": 19}


def test_the_policy_needs_no_cupy():
    import subprocess

    code = ("import sys\nfrom launchlab.chapters.fusion import plans\n"
            f"for rows, cols in {EDGES!r}: plans.fused_plan(rows, cols, {H200!r})\n"
            "print(sorted(m for m in sys.modules if m == 'cupy' or m.startswith('cupy.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_report_sets_the_pick_and_the_fastest_against_each_library():
    """tools/fused_fit.library_figures: shares where the pick (or the fastest candidate) took less time than a
    library, and the smallest library time over theirs."""
    rng = np.random.default_rng()
    pick = rng.uniform(1.0, 50.0, 40)
    best = pick * rng.uniform(0.7, 1.0, 40)
    library = pick * rng.uniform(0.8, 1.3, 40)
    figures = fused_fit.library_figures({"triton": list(zip(library, pick, best))})["triton"]
    assert figures["points"] == 40
    assert figures["pick_faster"] == pytest.approx(np.mean(pick < library))
    assert figures["best_faster"] == pytest.approx(np.mean(best < library))
    assert figures["best_faster"] >= figures["pick_faster"]
    assert figures["worst_over_pick"] == pytest.approx(np.min(library / pick))
    assert figures["worst_over_best"] == pytest.approx(np.min(library / best))
    assert figures["worst_over_best"] >= figures["worst_over_pick"]


def test_the_calibration_refuses_an_unknown_library():
    import calibrate_fused

    assert calibrate_fused.library_names("triton, cudnn") == ("triton", "cudnn")
    assert calibrate_fused.library_names("") == ()
    with pytest.raises(SystemExit, match="unknown tensorflow"):
        calibrate_fused.library_names("torch,tensorflow")


def test_offering_a_calibration_only_group_adds_exactly_its_builds(monkeypatch):
    """plans.CALIBRATION_ONLY: taking a group out of it (calibrate_fused --offer) puts that group's builds, and only
    them, among the policy's candidates; every group together gives every build but the split build the policy
    leaves out on purpose."""
    import calibrate_fused

    with pytest.raises(SystemExit, match="unknown bogus"):
        calibrate_fused.offer_groups("narrow_full,bogus")
    assert calibrate_fused.offer_groups(" thin_slices, narrow_full ") == {"thin_slices", "narrow_full"}
    groups = sorted(plans.CALIBRATION_ONLY)
    rng = np.random.default_rng()
    shapes = [(int(np.exp(rng.uniform(0, np.log(65536)))), int(np.exp(rng.uniform(0, np.log(1 << 21)))))
              for _ in range(60)]
    shapes = [(rows, cols) for rows, cols in shapes if 4 * rows * cols <= fused_cost.MAX_BYTES]
    base = {shape: {p["tag"] for p in plans.candidates(*shape, H200)} for shape in shapes}
    added = {}
    for group in groups:
        monkeypatch.setattr(plans, "CALIBRATION_ONLY", frozenset(groups) - {group})
        added[group] = {shape: {p["tag"] for p in plans.candidates(*shape, H200)} - base[shape] for shape in shapes}
        assert all(base[shape] <= {p["tag"] for p in plans.candidates(*shape, H200)} for shape in shapes)
    monkeypatch.setattr(plans, "CALIBRATION_ONLY", frozenset())
    for rows, cols in shapes:
        everything = {p["tag"] for p in plans.candidates(rows, cols, H200, every_build=True)}
        offered = {p["tag"] for p in plans.candidates(rows, cols, H200)}
        assert offered == base[rows, cols].union(*(added[g][rows, cols] for g in groups)), (rows, cols)
        assert everything - offered <= {"split-b256-u4", "split-b256-u6"}, (rows, cols)
    assert all(any(added[g].values()) for g in groups)  # every group adds builds somewhere on the draw


def test_the_calibration_never_overwrites_a_file(tmp_path):
    import subprocess

    out = tmp_path / "calibration.json"
    out.write_text("{}")
    done = subprocess.run([sys.executable, str(ROOT / "tools/calibrate_fused.py"), "--shapes", "3x5", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and f"{out} exists" in done.stderr
    assert out.read_text() == "{}"


def test_the_report_reads_the_libraries_a_calibration_timed(tmp_path):
    """fused_fit.report over a small calibration file holding libraries: only those valid after timing count, and
    the pick's and the fastest candidate's shares follow the times."""
    rng = np.random.default_rng()
    shapes = []
    for (rows, cols), times in zip([(3, 700), (900, 2000), (40, 50000)], [3.0, 0.5, 3.0]):
        copy = float(rng.uniform(1, 20))
        fused = []
        for plan in plans.candidates(rows, cols, H200, every_build=True):
            us = copy * float(rng.uniform(1.0, 2.0))
            fused.append({"tag": plan["tag"], "design": plan["design"], "mode": "plain", "module": plan["module"],
                          "tier": plan.get("tier"), "options": plan["options"], "valid": True,
                          "warm": [us] * 3, "cold": [us * 1.5] * 3})
        # every candidate takes 1-2 times the copy: the library is slower than all of them, or faster
        libraries = {"triton": {"valid": True, "valid_after": True, "warm": [copy * times] * 3,
                                "cold": [copy * 1.5 * times] * 3},
                     "torch": {"valid": True, "valid_after": False, "warm": [copy] * 3, "cold": [copy] * 3},
                     "cudnn": {"unavailable": "not loaded"}}
        shapes.append({"rows": rows, "cols": cols, "fused": fused, "libraries": libraries,
                       "copy": {k: {"warm": [copy] * 3, "cold": [copy * 1.5] * 3} for k in ("memcpy", "vector")}})
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"device": H200, "shapes": shapes}))
    summary = fused_fit.report(path)
    for l2 in ("warm", "cold"):
        assert set(summary[l2]["libraries"]) == {"triton"}  # torch failed its check after timing; cuDNN never ran
        triton = summary[l2]["libraries"]["triton"]
        assert triton["points"] == 3
        assert triton["pick_faster"] == triton["best_faster"] == pytest.approx(2 / 3)
        assert 0.25 <= triton["worst_over_pick"] <= triton["worst_over_best"] <= 0.5
        # at every shape the fastest build timed is at least as fast as the fastest the policy offers, and that one as
        # the pick: so are their figures over the shapes, in whichever regime has points
        for figure in ("geomean", "max", "latency_over_median_us"):
            found = [summary[l2][name][figure] for name in ("best", "offered", "pick")]
            assert None in found or found == sorted(found), (figure, found)
