"""What every chapter's GPU run and analysis share: failing validation, provenance, raw samples."""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.model import oracles


class ValidationFailed(RuntimeError):
    """A variant disagreed with the oracle; the run is written with verdict 'failed' and never timed further."""


def fail_validation(writer, record: dict, checks: list, reason: str, tolerance) -> None:
    """Write the checks and a failed verdict into the run, then stop it."""
    record["validation"] = {"verdict": "failed", "reason": reason, "tolerance": tolerance}
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record)
    raise ValidationFailed(f"{reason}: see {writer.path / 'validation.json'}")


def rms_tolerance() -> dict:
    return {"rtol": oracles.RMS_SOFTMAX_TOLERANCE.rtol, "atol": oracles.RMS_SOFTMAX_TOLERANCE.atol}


def provenance() -> dict:
    from launchlab.store.provenance import git_commit, source_tree_sha256
    return {"git_commit": git_commit(), "source_tree_sha256": source_tree_sha256()}


def read_jsonl(path: Path) -> list[dict]:
    """Raw samples: one JSON object per line."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
