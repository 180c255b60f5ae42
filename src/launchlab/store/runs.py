"""Chapter-independent analysis: open a run, recompute its summaries, compare with the saved ones."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from launchlab.store import evidence
from launchlab.chapters import chapter_module


@dataclasses.dataclass
class ChapterRun:
    """A run as a chapter page sees it: its record, summaries and headline figures."""
    path: Path
    record: dict
    summaries: dict
    headline: dict

    @property
    def run_id(self) -> str:
        return self.path.name


def recompute(run_dir: Path) -> tuple[dict, dict]:
    """(summaries, headline) from the raw files of the run alone."""
    record = evidence.read_run_record(run_dir)
    module = chapter_module(record["chapter"])
    summaries = module.summarize(run_dir)
    return summaries, module.headline(summaries)


def _canonical(obj):
    return json.loads(json.dumps(obj, sort_keys=True, allow_nan=False))


def analyze(run_dir: Path) -> list[str]:
    """Differences between the saved summaries/headline and a fresh recomputation (empty: identical)."""
    run_dir = Path(run_dir)
    summaries, headline = recompute(run_dir)
    problems = []
    for name, fresh in (("summaries.json", summaries), ("headline.json", headline)):
        saved_path = run_dir / name
        if not saved_path.exists():
            problems.append(f"{run_dir.name}/{name} is missing")
        elif json.loads(saved_path.read_text()) != _canonical(fresh):
            problems.append(f"{run_dir.name}/{name} differs from the recomputation from raw samples")
    return problems


def open_run(run_dir: Path) -> ChapterRun:
    """Load a sealed run, recomputing its summaries and insisting they match the saved ones."""
    problems = analyze(run_dir)
    if problems:
        raise evidence.EvidenceError("; ".join(problems))
    run_dir = Path(run_dir)
    return ChapterRun(run_dir, evidence.read_run_record(run_dir),
                      json.loads((run_dir / "summaries.json").read_text()),
                      json.loads((run_dir / "headline.json").read_text()))
