"""One type for reading a run: `Run` (its record, summaries and headline), the readers of its raw files, and
the comparison of its saved summaries with a recomputation.

The store knows no chapter: recomputing a run's summaries needs its chapter's summary module, so that module
is passed in (`summarize`). `launchlab.analysis`, which sits above the chapters, finds it and is where runs are
opened (`open_run` checks the manifest and insists the saved summaries equal the recomputed ones).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from launchlab.store import evidence
from launchlab.store.files import read_json, read_jsonl
from launchlab.store.record import RunRecord


@dataclasses.dataclass
class Run:
    path: Path
    record: RunRecord
    summaries: dict
    headline: dict

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def chapter(self) -> str:
        return self.record.chapter

    @property
    def device(self) -> str:
        return self.record.device_name

    def file(self, relative: str) -> Path:
        """The run's file, wherever it lies (evidence.run_file: in the run, or in the run that holds it)."""
        return evidence.run_file(self.path, relative)

    def jsonl(self, relative: str) -> list[dict]:
        return read_jsonl(self.file(relative))

    def json(self, relative: str):
        return read_json(self.file(relative))

    def value(self, key: str):
        """A headline figure by name; a missing one is an error, never a silent blank."""
        if key not in self.headline:
            raise KeyError(f"run {self.run_id} ({self.chapter}) has no headline figure {key!r}")
        return self.headline[key]

    @classmethod
    def read(cls, path: Path) -> "Run":
        """The run's record, summaries and headline as saved, unchecked (`analysis.open_run` checks them)."""
        path = Path(path)
        return cls(path, RunRecord.read(path), read_json(path / "summaries.json"),
                   read_json(path / "headline.json"))


def checks_by_phase(checks: list[dict]) -> dict:
    """{phase: {"checks": n, "passed": n}} over a run's validation checks, in the order phases first appear."""
    by_phase: dict = {}
    for check in checks:
        entry = by_phase.setdefault(check["phase"], {"checks": 0, "passed": 0})
        entry["checks"] += 1
        entry["passed"] += bool(check["passed"])
    return by_phase


def summarize(run_dir: Path, summary) -> tuple[dict, dict]:
    """(summaries, headline) from the raw files of the run alone, by its chapter's `summary` module."""
    summaries = summary.summarize(Path(run_dir), RunRecord.read(run_dir))
    return summaries, summary.headline(summaries)


def _canonical(obj):
    return json.loads(json.dumps(obj, sort_keys=True, allow_nan=False))


def differences(run_dir: Path, summaries: dict, headline: dict) -> list[str]:
    """Where the saved summaries/headline differ from the given recomputation (empty: identical)."""
    run_dir = Path(run_dir)
    problems = []
    for name, fresh in (("summaries.json", summaries), ("headline.json", headline)):
        saved_path = run_dir / name
        if not saved_path.exists():
            problems.append(f"{run_dir.name}/{name} is missing")
        elif read_json(saved_path) != _canonical(fresh):
            problems.append(f"{run_dir.name}/{name} differs from the recomputation from raw samples")
    return problems
