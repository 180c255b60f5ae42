"""The expanded default variant tables of chapters 1 and 2 and the two appendix examples: each against its committed
snapshot, and against what its accepted run measured or skipped."""
import json
from pathlib import Path

import pytest

from launchlab.chapters import chapter
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.runs import read_jsonl

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
STEMS = ("ordinary_launches", "graphs", "example_a_pointwise", "example_b_jobs")


@pytest.mark.parametrize("stem", STEMS)
def test_the_default_variant_table_matches_its_snapshot(stem):
    """A row added, removed or changed (bytes, oracle, pacing, outputs, requirements) shows here; if the change is
    meant, regenerate the snapshot and commit it with the change."""
    regenerate = (f"PYTHONPATH=src python -c \"from launchlab.chapters import chapter; "
                  f"print(chapter('{stem}').snapshot(), end='')\" > tests/snapshots/{stem}.txt")
    assert chapter(stem).snapshot() == (SNAPSHOTS / f"{stem}.txt").read_text(), \
        f"{stem}'s variant table differs from tests/snapshots/{stem}.txt; if meant, regenerate it: {regenerate}"


@pytest.mark.parametrize("stem", STEMS)
def test_the_accepted_run_measured_or_skipped_every_declared_variant(stem):
    path = evidence.accepted_run(stem)
    measured = {sample["variant"] for sample in read_jsonl(path / SAMPLES_FILE)}
    skipped = set(json.loads((path / "run.json").read_text()).get("details", {}).get("skipped_variants", {}))
    declared = {str(v.id) for v in chapter(stem).variants()}
    assert measured | skipped == declared
