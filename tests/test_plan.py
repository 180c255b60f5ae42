"""`python -m launchlab plan`: every declared variant listed, with an estimate that grows with the work."""
import dataclasses

import pytest

from launchlab import plan
from launchlab.__main__ import main
from launchlab.chapters import STEMS, chapter


@pytest.mark.parametrize("stem", STEMS)
def test_the_plan_lists_every_declared_variant_with_a_positive_estimate(stem):
    declared = chapter(stem)
    rows = plan.plan_rows(declared, declared.parameters())
    assert [row["variant"] for row in rows] == [str(v.id) for v in declared.variants()]
    assert all(row["gpu_s"] > 0 for row in rows)


def test_more_bytes_and_a_cold_l2_cost_more():
    variant = chapter("fusion").variants()[0]
    bigger = dataclasses.replace(variant, calls=variant.calls * 1000)
    assert plan.estimate(bigger) > plan.estimate(variant)
    assert plan.estimate(dataclasses.replace(variant, l2=("warm", "cold"))) > plan.estimate(dataclasses.replace(variant, l2=("warm",)))


def test_the_command_prints_the_variants_and_the_accepted_runs_wall_time(capsys):
    assert main(["plan", "graphs", "-p", "row_shapes", "64x100"]) == 0
    out = capsys.readouterr().out
    assert "row4.64x100.graph" in out and "estimated GPU time" in out and "the accepted run" in out
    assert main(["plan", "graphs", "-p", "no_such", "1"]) == 2
    assert "unknown parameter" in capsys.readouterr().err
