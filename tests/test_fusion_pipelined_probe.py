"""The pipelined-cluster probe's result as the fusion page quotes it (chapters/fusion/pipelined_probe.py)."""
import json
import shutil
import subprocess

import pytest

from launchlab.chapters.fusion import pipelined_probe
from launchlab.store.evidence import REPO_ROOT


def _shape(rows, cols, pick, variants):
    """variants: (valid, warm, cold) or (valid, warm, cold, depth)."""
    return {"rows": rows, "cols": cols, "pick": {"tag": "t", "warm": pick[0], "cold": pick[1]},
            "variants": [{"valid": v[0], "warm": v[1], "cold": v[2], **({"depth": v[3]} if len(v) > 3 else {})}
                         for v in variants]}


def _write(tmp_path, shapes, device="Some GPU", name="pcluster_probe.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"device": device, "shapes": shapes}))
    return path


def test_each_shape_takes_its_fastest_valid_variant_over_the_pick():
    data = {"shapes": [
        _shape(47, 126781, (10.0, 20.0), [(True, 12.0, 30.0), (True, 11.0, 22.0), (False, 5.0, 5.0)]),
        _shape(17, 520106, (10.0, 10.0), []),  # no variant fit: left out
        _shape(9, 9, (10.0, 10.0), [(False, 1.0, 1.0)])]}  # none valid: left out
    found = pipelined_probe.over_pick(data)
    assert list(found) == ["47x126781"]
    assert found["47x126781"] == {"warm": pytest.approx(1.1), "cold": pytest.approx(1.1)}


def test_the_glued_values_give_ranges_counts_the_closest_shape_and_the_verdict(tmp_path):
    path = _write(tmp_path, [_shape(47, 126781, (10.0, 20.0), [(True, 11.0, 22.0), (True, 13.0, 21.0)]),
                             _shape(159, 39440, (10.0, 10.0), [(True, 15.0, 10.0), (False, 1.0, 1.0)])])
    values = pipelined_probe.pipelined_values(path, tmp_path / "no_depth_run.json")
    assert values["pipelined_device"] == "Some GPU"
    assert (values["pipelined_deeper"], values["pipelined_deeper_shapes"]) == ("n/a", "0")
    assert (values["pipelined_shapes"], values["pipelined_compared"]) == ("2", "2")
    assert (values["pipelined_variants"], values["pipelined_valid"]) == ("4", "3")
    assert values["pipelined_over_pick_warm"] == "1.10–1.50"
    assert values["pipelined_over_pick_cold"] == "1.00–1.05"
    assert values["pipelined_closest_cold"] == "159×39440 (1.00)"
    assert values["pipelined_verdict"] == "it was never faster than the pick"


def test_a_variant_faster_than_the_pick_is_said(tmp_path):
    path = _write(tmp_path, [_shape(47, 126781, (10.0, 20.0), [(True, 9.0, 22.0)])], device={"name": "Other"})
    values = pipelined_probe.pipelined_values(path, tmp_path / "no_depth_run.json")
    assert values["pipelined_device"] == "Other"
    assert values["pipelined_verdict"] == "it was faster than the pick at 1 of 1 shapes in an L2 state"


def test_the_deeper_run_compares_its_fastest_deeper_variant_with_the_fastest_of_two_buffers(tmp_path):
    path = _write(tmp_path, [_shape(47, 126781, (10.0, 10.0), [(True, 11.0, 12.0)])])
    depth = _write(tmp_path, [
        _shape(47, 126781, (10.0, 10.0), [(True, 11.0, 12.0, 2), (True, 13.2, 11.4, 3), (True, 12.1, 30.0, 4),
                                          (False, 1.0, 1.0, 3)]),
        _shape(9, 9, (10.0, 10.0), [(True, 11.0, 12.0, 2)])], name="depth.json")  # no deeper variant: left out
    assert pipelined_probe.deeper_over_two(json.loads(depth.read_text())) == {
        "47x126781": {"warm": pytest.approx(1.1), "cold": pytest.approx(0.95)}}
    values = pipelined_probe.pipelined_values(path, depth)
    assert (values["pipelined_deeper"], values["pipelined_deeper_shapes"]) == ("0.95–1.10", "1")
    assert values["pipelined_deeper_verdict"] == "no variant of that run beat the pick either"
    faster = _write(tmp_path, [_shape(9, 9, (10.0, 10.0), [(True, 9.0, 12.0, 2), (True, 11.0, 12.0, 3)])],
                    name="faster.json")
    assert pipelined_probe.pipelined_values(path, faster)["pipelined_deeper_verdict"] == (
        "variants of that run beat the pick at one shape")


def test_a_missing_or_empty_result_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="tools/dev_pcluster.py"):
        pipelined_probe.load(tmp_path / "absent.json")
    with pytest.raises(ValueError, match="no shape has both"):
        pipelined_probe.load(_write(tmp_path, [_shape(1, 1, (1.0, 1.0), [])]))


def test_the_committed_result_gives_every_value():
    values = pipelined_probe.pipelined_values() | pipelined_probe.later_probe_values()
    assert all(value and value != "n/a" for value in values.values())


def _floor_shape(rows, cols, ratios):
    """ratios: {variant: (warm, cold)} over the copy ceiling, beside the ceiling's own entries."""
    return {"rows": rows, "cols": cols, "over_copy": {"memcpy": {"warm": 1.6, "cold": 1.0},
                                                      "copy_vec4": {"warm": 1.0, "cold": 1.1},
                                                      **{k: {"warm": w, "cold": c} for k, (w, c) in ratios.items()}}}


def test_the_later_probes_give_their_ranges_over_the_pick_and_the_schedules_floor_over_the_copy(tmp_path):
    lag = _write(tmp_path, [_shape(47, 126781, (10.0, 20.0), [(True, 12.0, 22.0), (True, 11.0, 30.0)]),
                            _shape(6, 1546367, (10.0, 10.0), [(True, 20.0, 9.0)])], name="lag.json")
    gpipe = _write(tmp_path, [_shape(47, 126781, (10.0, 10.0), [(True, 15.0, 15.0), (False, 1.0, 1.0)])],
                   name="gpipe.json")
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps({"shapes": [_floor_shape(47, 126781, {"b1_k8_d1": (1.4, 1.3), "b2_k8_d2": (1.3, 1.5)}),
                                            _floor_shape(3, 5, {})]}))  # no variant ran: left out
    values = pipelined_probe.later_probe_values(lag, gpipe, floor)
    assert values["lagged_over_pick_warm"] == "1.10–2.00" and values["lagged_over_pick_cold"] == "0.90–1.10"
    assert values["lagged_verdict"] == "faster than the pick at one shape in an L2 state"
    assert (values["gpipe_compared"], values["gpipe_valid"], values["gpipe_verdict"]) == (
        "1", "1 of 2", "never faster than the pick")
    assert values["schedule_floor_shapes"] == "1"
    assert (values["schedule_floor_warm"], values["schedule_floor_cold"]) == ("1.30", "1.30")  # never the ceilings'
    assert values["schedule_floor_closest_warm"] == "47×126781 (1.30)"
    with pytest.raises(FileNotFoundError, match="tools/dev_pipeline_floor.py"):
        pipelined_probe.later_probe_values(lag, gpipe, tmp_path / "absent.json")
    with pytest.raises(FileNotFoundError, match="tools/dev_lag.py"):
        pipelined_probe.later_probe_values(tmp_path / "absent.json", gpipe, floor)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("source, defines", [("dev_pcluster.cu", ("-DCLUSTER=16", "-DBLOCK=256")),
                                             ("dev_pcluster.cu", ("-DCLUSTER=1", "-DBLOCK=1024")),
                                             ("dev_phase_floor.cu", ()),
                                             ("dev_pipeline_floor.cu", ()),
                                             ("dev_gpipe.cu", ()),
                                             ("dev_lag.cu", ())])
def test_the_development_probes_kernels_still_compile_for_sm_90(tmp_path, source, defines):
    """The probes include the chapter's kernels' helpers: a change there must not leave them unbuildable."""
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", *defines, "-o", str(tmp_path / "probe.cubin"),
                             str(REPO_ROOT / "tools" / source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
