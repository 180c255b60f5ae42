"""The typed run record (`run.json`): the core fields every chapter's run holds, plus its own details.

Core fields: which chapter and run, its parameters and protocol, the host path it measured, the
device and the software environment (driver, CUDA runtime, CuPy, Python, NumPy, the libraries a
chapter used, CPU model), device state (clocks, temperature, power) before and after timing and
whether the SM clock dropped, the git commit and source-tree hash, and the validation verdict.
Chapter-specific facts go into `details`.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from launchlab.store.files import read_json

VERDICTS = ("passed", "failed", "pending")


class RecordError(ValueError):
    """A run.json that lacks a core field or holds a wrong type."""


@dataclasses.dataclass
class RunRecord:
    chapter: str
    run_id: str
    parameters: dict
    protocol: dict
    host_path: str
    device: dict
    environment: dict
    git_commit: str | None
    source_tree_sha256: str
    states: dict = dataclasses.field(default_factory=dict)
    clocks_dropped: bool | None = None
    validation: dict = dataclasses.field(default_factory=lambda: {"verdict": "pending"})
    details: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict, source: str = "run.json") -> "RunRecord":
        fields = {f.name: f for f in dataclasses.fields(cls)}
        required = [name for name, f in fields.items()
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise RecordError(f"{source} lacks the core field(s) {', '.join(missing)}")
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise RecordError(f"{source} has field(s) outside the run record: {', '.join(unknown)}")
        record = cls(**data)
        if record.validation.get("verdict") not in VERDICTS:
            raise RecordError(f"{source}: validation verdict {record.validation.get('verdict')!r} is not one of {VERDICTS}")
        return record

    @classmethod
    def read(cls, run_dir: Path) -> "RunRecord":
        path = Path(run_dir) / "run.json"
        data = read_json(path)
        if not isinstance(data, dict):
            raise RecordError(f"{path} holds a JSON {type(data).__name__}, not an object")
        return cls.from_dict(data, str(path))

    @property
    def verdict(self) -> str:
        return self.validation.get("verdict", "pending")

    @property
    def device_name(self) -> str:
        return self.device["name"]

    @property
    def from_committed_code(self) -> bool:
        return bool(self.git_commit) and "+" not in self.git_commit
