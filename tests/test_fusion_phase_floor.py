"""The phase-floor probe's result as the fusion page quotes it (chapters/fusion/phase_floor.py)."""
import json

import pytest

from launchlab.chapters.fusion import phase_floor


def _entry(**ratios):
    return {"over_copy": {name: {"warm": w, "cold": c} for name, (w, c) in ratios.items()}}


def _write(tmp_path, sizes):
    path = tmp_path / "phase_floor.json"
    path.write_text(json.dumps({"device": {"name": "Some GPU"}, "sizes": sizes}))
    return path


def test_each_kind_takes_its_faster_block_shape_and_sizes_need_both_kinds(tmp_path):
    data = {"sizes": {
        "8": _entry(memcpy=(1.0, 1.0), phased_local_1x1024=(1.3, 1.1), phased_local_2x512=(1.2, 1.15),
                    phased_grid_1x1024=(1.6, 1.3), phased_grid_2x512=(1.7, 1.2), group1=(1.0, 1.0), group2=(1.5, 1.1),
                    group24=(1.55, 1.12)),
        "40": _entry(memcpy=(1.0, 1.0), read_only=(0.4, 0.6)),  # too large for the phased kernels: left out
        "16": _entry(phased_local_2x512=(1.1, 1.0), phased_grid_2x512=(1.4, 1.17), group2=(1.3, 1.1)),
        "24": _entry(phased_local_2x512=(1.1, 1.0), phased_grid_2x512=(1.4, 1.17))}}  # no pair: left out
    found = phase_floor.floors(data)
    assert list(found) == [8, 16]
    assert found[8]["phased_local"] == {"warm": 1.2, "cold": 1.1}  # group1 is not one of its names
    assert found[8]["phased_pair"] == {"warm": 1.5, "cold": 1.1}  # group24 is not either
    assert found[8]["phased_grid"] == {"warm": 1.6, "cold": 1.2}


def test_values_give_ranges_over_the_sizes(tmp_path):
    path = _write(tmp_path, {"4": _entry(phased_local_1x1024=(1.25, 1.0), phased_grid_1x1024=(1.7, 1.11),
                                         group2=(1.5, 1.13)),
                             "28": _entry(phased_local_1x1024=(1.05, 1.07), phased_grid_1x1024=(1.23, 1.11),
                                          group2=(1.2, 1.1))})
    values = phase_floor.phase_floor_values(path)
    assert values["phase_floor_sizes_mb"] == "4–28"
    assert values["phase_floor_device"] == "Some GPU"
    assert values["phase_floor_local_warm"] == "1.05–1.25"
    assert values["phase_floor_local_cold"] == "1.00–1.07"
    assert values["phase_floor_grid_warm"] == "1.23–1.70"
    assert values["phase_floor_grid_cold"] == "1.11"  # one value where the ends print alike
    assert values["phase_floor_pair_warm"] == "1.20–1.50"


def test_a_missing_or_empty_result_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="phase_floor.json: the phase-floor probe's result is missing"):
        phase_floor.load(tmp_path / "phase_floor.json")
    path = _write(tmp_path, {"8": _entry(phased_local_1x1024=(1.2, 1.1))})
    with pytest.raises(ValueError, match="no size has a measurement of each of phased_local, phased_pair, phased_grid"):
        phase_floor.load(path)


def test_the_committed_probe_has_a_floor_above_each_block_on_its_own():
    """The committed measurement: waiting for the slowest block costs more than not waiting, at every size, and so
    does waiting for one partner, warm."""
    found = phase_floor.floors(phase_floor.load())
    assert found
    for size, kinds in found.items():
        for l2 in ("warm", "cold"):
            assert kinds["phased_grid"][l2] > kinds["phased_local"][l2], (size, l2)
        assert kinds["phased_pair"]["warm"] > kinds["phased_local"]["warm"], size
