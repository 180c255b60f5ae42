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


@pytest.mark.parametrize("stem", STEMS)
def test_a_row_added_to_a_declaration_is_expanded_like_its_model(stem, monkeypatch):
    """A variant that reuses an existing kernel is one more row: a copy of each row under a new name expands to the
    same cases, submissions, bytes and outputs as the row it copies, with no other edit."""
    import dataclasses
    import importlib

    package = importlib.import_module(f"launchlab.chapters.{stem}")
    for model in package.ROWS:
        copy = dataclasses.replace(model, name=f"{model.name}_again")
        monkeypatch.setattr(package, "ROWS", (*package.ROWS, copy))
        variants = chapter(stem).variants()
        monkeypatch.undo()

        def expanded(row):
            return {(str(v.id).split(".", 1)[1], v.bytes_read, v.bytes_written, v.enters, v.l2_states)
                    for v in variants if v.id.target == row.name}
        assert expanded(copy) and expanded(copy) == expanded(model), f"{stem}: a copy of row {model.name} expands differently"


def test_example_b_graph_and_submission_counts_come_from_its_rows():
    from launchlab.chapters import example_b_jobs as jobs

    for row in jobs.ROWS:
        assert jobs.GRAPH_NODES[row.name] == (len(row.kernels), row.memsets)
        assert jobs.STREAM_SUBMISSIONS[row.name] == len(row.kernels) + row.memsets
        assert jobs.KERNELS[row.name] == jobs.model.KERNELS[row.name]
