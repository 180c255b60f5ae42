"""The Triton-layout probe's result as the fusion page quotes it (chapters/fusion/triton_layout.py)."""
import json

import pytest

from launchlab.chapters.fusion import triton_layout


def _variant(kind, warm, cold, block=None, valid=True):
    return {"variant": kind, "block": block, "warm": warm, "cold": cold, "valid": valid}


def _write(tmp_path, shapes):
    path = tmp_path / "triton_gap.json"
    path.write_text(json.dumps({"device": "Some GPU", "shapes": shapes}))
    return path


def test_each_layout_takes_its_fastest_valid_build_and_shapes_need_all_three():
    data = {"shapes": [
        {"rows": 900, "cols": 400, "variants": [
            _variant("triton", 2.2, 5.0), _variant("base", 2.0, 5.0, 64), _variant("base", 2.5, 4.0, 128),
            _variant("scalar", 1.8, 5.2, 64), _variant("scalar", 1.0, 1.0, 128, valid=False),  # invalid: never counted
            _variant("plain", 0.5, 0.5, 64)]},  # another variant: not a layout
        {"rows": 3000, "cols": 1500, "variants": [_variant("triton", 2.0, 2.0), _variant("base", 2.0, 2.0, 64)]}]}
    found = triton_layout.comparisons(data)
    assert [(p["rows"], p["cols"]) for p in found] == [(900, 400)]
    point = found[0]
    assert point["layout"]["warm"] == pytest.approx(0.9)  # 1.8 / 2.0
    assert point["layout"]["cold"] == pytest.approx(5.2 / 4.0)  # the fastest of each layout in each L2 state
    assert point["triton"]["warm"] == pytest.approx(1.1)
    assert point["triton_over_layout"]["warm"] == pytest.approx(2.2 / 1.8)


def test_values_split_gains_from_losses_and_name_where_triton_wins(tmp_path):
    path = _write(tmp_path, [
        {"rows": 2400, "cols": 431, "variants": [_variant("triton", 2.9, 6.0), _variant("base", 3.0, 6.0),
                                                 _variant("scalar", 2.7, 6.3)]},
        {"rows": 1919, "cols": 797, "variants": [_variant("triton", 3.6, 7.0), _variant("base", 4.0, 7.0),
                                                 _variant("scalar", 3.8, 7.0)]},
        {"rows": 4307, "cols": 1156, "variants": [_variant("triton", 13.0, 14.0), _variant("base", 12.0, 14.0),
                                                  _variant("scalar", 13.2, 14.7)]}])
    values = triton_layout.triton_layout_values(path)
    assert values["triton_layout_device"] == "Some GPU"
    assert values["triton_layout_shapes"] == "3"
    assert values["triton_layout_rows"] == "1,919–4,307"
    assert values["triton_layout_gain_warm"] == "0.90–0.95"
    assert values["triton_layout_gain_cols"] == "431–797"
    assert values["triton_layout_loss_warm"] == "1.10"
    assert values["triton_layout_loss_cols"] == "1,156"
    assert values["triton_layout_cold"] == "1.00–1.05"
    assert values["triton_layout_triton_wins_warm"] == "2"
    assert values["triton_layout_against_layout_warm"] == "0.95–1.07"  # 3.6 / 3.8 and 2.9 / 2.7


def test_a_side_with_no_shape_says_so(tmp_path):
    path = _write(tmp_path, [{"rows": 500, "cols": 400, "variants": [
        _variant("triton", 3.0, 6.0), _variant("base", 2.0, 6.0), _variant("scalar", 1.9, 6.0)]}])
    values = triton_layout.triton_layout_values(path)
    assert values["triton_layout_loss_warm"] == values["triton_layout_loss_cols"] == "n/a"
    assert values["triton_layout_triton_wins_warm"] == "0"
    assert values["triton_layout_against_layout_warm"] == "n/a"


def test_a_missing_or_empty_result_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="triton_gap.json: the Triton-layout probe's result is missing"):
        triton_layout.load(tmp_path / "triton_gap.json")
    path = _write(tmp_path, [{"rows": 500, "cols": 400, "variants": [_variant("triton", 3.0, 6.0)]}])
    with pytest.raises(ValueError, match="no shape has a valid timing of Triton, the base builds and the scalar builds"):
        triton_layout.load(path)


def test_the_committed_probe_has_the_layout_gain_somewhere_and_lose_somewhere():
    """The committed measurement: Triton's layout is neither better nor worse everywhere, warm, so the page's sentence
    that no one layout wins holds for the file it quotes."""
    ratios = [p["layout"]["warm"] for p in triton_layout.comparisons(triton_layout.load())]
    assert min(ratios) < 1 < max(ratios)
