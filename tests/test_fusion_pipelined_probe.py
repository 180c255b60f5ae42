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
    values = pipelined_probe.pipelined_values()
    assert all(value and value != "n/a" for value in values.values())


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("source, defines", [("dev_pcluster.cu", ("-DCLUSTER=16", "-DBLOCK=256")),
                                             ("dev_pcluster.cu", ("-DCLUSTER=1", "-DBLOCK=1024")),
                                             ("dev_phase_floor.cu", ()),
                                             ("dev_pipeline_floor.cu", ())])
def test_the_development_probes_kernels_still_compile_for_sm_90(tmp_path, source, defines):
    """The probes include the chapter's kernels' helpers: a change there must not leave them unbuildable."""
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", *defines, "-o", str(tmp_path / "probe.cubin"),
                             str(REPO_ROOT / "tools" / source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
