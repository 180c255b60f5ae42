"""One type for reading a run: `Run` (its record, summaries and headline), and the check that a run's
saved summaries are exactly what its raw files give.

Pages, claims and the command line all read runs through `Run.open` / `accepted_run`. Opening a
sealed run checks its manifest first; opening any run recomputes its summaries from raw samples
and insists they equal the saved ones.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

from launchlab.store import evidence
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
        path = self.path / relative
        if not path.exists():
            raise evidence.EvidenceError(f"run {self.run_id} has no file {relative}")
        return path

    def jsonl(self, relative: str) -> list[dict]:
        return read_jsonl(self.file(relative))

    def json(self, relative: str):
        return json.loads(self.file(relative).read_text())

    def value(self, key: str):
        """A headline figure by name; a missing one is an error, never a silent blank."""
        if key not in self.headline:
            raise KeyError(f"run {self.run_id} ({self.chapter}) has no headline figure {key!r}")
        return self.headline[key]

    @classmethod
    def open(cls, path: Path, require_sealed: bool = True) -> "Run":
        path = Path(path)
        if require_sealed:
            problems = evidence.verify_run(path)
            if problems:
                raise evidence.EvidenceError(f"run {path.name} does not verify: {'; '.join(problems[:3])}")
        problems = analyze(path)
        if problems:
            raise evidence.EvidenceError("; ".join(problems))
        return cls(path, RunRecord.read(path), json.loads((path / "summaries.json").read_text()),
                   json.loads((path / "headline.json").read_text()))


def read_jsonl(path: Path) -> list[dict]:
    """Raw samples, one JSON object per line; `.gz` files are read compressed."""
    path = Path(path)
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def checks_by_phase(checks: list[dict]) -> dict:
    """{phase: {"checks": n, "passed": n}} over a run's validation checks, in the order phases first appear."""
    by_phase: dict = {}
    for check in checks:
        entry = by_phase.setdefault(check["phase"], {"checks": 0, "passed": 0})
        entry["checks"] += 1
        entry["passed"] += bool(check["passed"])
    return by_phase


def accepted_run(stem: str, root: Path = evidence.EVIDENCE_ROOT) -> Run:
    return Run.open(evidence.accepted_run(stem, root))


def recompute(run_dir: Path) -> tuple[dict, dict]:
    """(summaries, headline) from the raw files of the run alone."""
    from launchlab.chapters import chapter

    record = RunRecord.read(run_dir)
    summary = chapter(record.chapter).summary
    summaries = summary.summarize(Path(run_dir), record)
    return summaries, summary.headline(summaries)


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
