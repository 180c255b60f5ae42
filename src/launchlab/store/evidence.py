"""The evidence store: immutable run directories, manifests, acceptance.

Layout under the evidence root:
    runs/<RUN_ID>/...        one directory per run, sealed by manifest.json
    failed/<RUN_ID>/...      runs whose validation failed, with REASON.txt
    accepted.json            {"<notebook stem>": "<RUN_ID>"}

A run is written once. `RunWriter` refuses an existing directory and an existing
file; `seal` writes the manifest, after which the run is only read.
"""
from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from launchlab.store.files import EvidenceError, read_json, unreadable

REPO_ROOT = Path(__file__).resolve().parents[3]
# LAUNCHLAB_EVIDENCE_ROOT moves the store (the command line's --root sets it for papermill's kernel too).
EVIDENCE_ROOT = Path(os.environ.get("LAUNCHLAB_EVIDENCE_ROOT") or REPO_ROOT / "evidence")
MANIFEST = "manifest.json"
RUN_ID_PATTERN = re.compile(r"^\d{8}T\d{6}Z-[a-z0-9][a-z0-9-]{0,30}$")


def new_run_id(tag: str, now: _dt.datetime | None = None) -> str:
    """RUN_ID = UTC timestamp YYYYMMDDTHHMMSSZ plus a short tag."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    run_id = f"{now.strftime('%Y%m%dT%H%M%SZ')}-{tag}"
    if not RUN_ID_PATTERN.match(run_id):
        raise EvidenceError(f"tag {tag!r} makes an invalid run id {run_id!r} (lower-case letters, digits, '-')")
    return run_id


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_array(array: np.ndarray) -> str:
    """Hash of a large array's C-order bytes, dtype and shape: what a run keeps instead of the array."""
    array = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def to_json(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n"


class RunWriter:
    """Writes the files of one new run; never replaces anything."""

    def __init__(self, run_id: str, root: Path = EVIDENCE_ROOT):
        if not RUN_ID_PATTERN.match(run_id):
            raise EvidenceError(f"invalid run id {run_id!r}: expected YYYYMMDDTHHMMSSZ-tag")
        self.run_id = run_id
        self.root = Path(root)
        self.path = self.root / "runs" / run_id
        if (self.root / "failed" / run_id).exists():
            raise EvidenceError(f"run {run_id} exists under failed/; it is never overwritten")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.path.mkdir()
        except FileExistsError:
            raise EvidenceError(f"run {run_id} exists at {self.path}; a run is never overwritten") from None

    def _target(self, relative: str) -> Path:
        target = (self.path / relative).resolve()
        if self.path.resolve() not in target.parents:
            raise EvidenceError(f"{relative!r} lies outside run {self.run_id}")
        if target.exists():
            raise EvidenceError(f"{relative} already exists in run {self.run_id}; files are written once")
        if (self.path / MANIFEST).exists():
            raise EvidenceError(f"run {self.run_id} is sealed; {relative} cannot be added")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, relative: str, data: bytes) -> Path:
        target = self._target(relative)
        target.write_bytes(data)
        return target

    def write_json(self, relative: str, obj) -> Path:
        return self.write_text(relative, to_json(obj))

    def write_jsonl(self, relative: str, records) -> Path:
        """JSON lines; a name ending in .gz is written gzip-compressed (reproducible bytes)."""
        text = "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records)
        return self.write_text(relative, text)

    def write_text(self, relative: str, text: str) -> Path:
        data = text.encode()
        return self.write_bytes(relative, gzip.compress(data, mtime=0) if relative.endswith(".gz") else data)

    def write_arrays(self, relative: str, **arrays: np.ndarray) -> Path:
        """Small arrays, compressed (.npz)."""
        target = self._target(relative)
        with open(target, "wb") as handle:
            np.savez_compressed(handle, **arrays)
        return target


def build_manifest(run_dir: Path) -> dict:
    files = {}
    for path in sorted(p for p in Path(run_dir).rglob("*") if p.is_file()):
        relative = path.relative_to(run_dir).as_posix()
        if relative != MANIFEST:
            files[relative] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    return {"files": files}


def seal(run_dir: Path) -> dict:
    """Write manifest.json over every other file of the run; a sealed run is final."""
    run_dir = Path(run_dir)
    if (run_dir / MANIFEST).exists():
        raise EvidenceError(f"run {run_dir.name} is already sealed")
    manifest = build_manifest(run_dir)
    (run_dir / MANIFEST).write_text(to_json(manifest))
    return manifest


def verify_run(run_dir: Path) -> list[str]:
    """Problems with one run, each naming the file: missing, changed, or not in the manifest."""
    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST
    if not manifest_path.exists():
        return [f"{run_dir.name}: no {MANIFEST} (unsealed run)"]
    try:
        listed = json.loads(manifest_path.read_text())["files"]
    except (ValueError, KeyError, TypeError) as error:
        return [f"{run_dir.name}/{MANIFEST}: unreadable ({type(error).__name__}: {error})"]
    actual = build_manifest(run_dir)["files"]
    problems = [f"{run_dir.name}/{relative}: {why}" for relative in sorted(actual)
                if (why := unreadable(run_dir / relative))]
    for relative, entry in sorted(listed.items()):
        if "held_by" in entry:
            problems += elsewhere_problems(run_dir, relative, entry)
        elif relative not in actual:
            problems.append(f"{run_dir.name}/{relative}: listed in the manifest but missing")
        elif actual[relative] != entry:
            problems.append(f"{run_dir.name}/{relative}: sha256 or size differs from the manifest")
    for relative in sorted(set(actual) - set(listed)):
        problems.append(f"{run_dir.name}/{relative}: not in the manifest")
    return problems


def elsewhere_problems(run_dir: Path, relative: str, entry: dict) -> list[str]:
    """A manifest entry whose file another run holds byte for byte (`held_by`: a replicate's build outputs)."""
    if (run_dir / relative).exists():
        return [f"{run_dir.name}/{relative}: present, though the manifest says run {entry['held_by']} holds it"]
    held = held_path(run_dir, relative, entry)
    if not held.is_file():
        return [f"{run_dir.name}/{relative}: held by run {entry['held_by']}, which has no such file"]
    if sha256_file(held) != entry["sha256"] or held.stat().st_size != entry["bytes"]:
        return [f"{run_dir.name}/{relative}: held by run {entry['held_by']}, whose copy differs"]
    return []


def held_path(run_dir: Path, relative: str, entry: dict) -> Path:
    """Where the run that a manifest entry's `held_by` names keeps the file (the same path in that run)."""
    return Path(run_dir).parent / str(entry["held_by"]) / relative


def run_file(run_dir: Path, relative: str) -> Path:
    """Where a run's file lies: in the run, or, where its manifest says another run holds it byte for byte
    (`held_by`), in that run. A file in neither is an error naming the run and the file."""
    run_dir = Path(run_dir)
    path = run_dir / relative
    if path.is_file():
        return path
    manifest = run_dir / MANIFEST
    entry = json.loads(manifest.read_text())["files"].get(relative, {}) if manifest.is_file() else {}
    if "held_by" in entry:
        held = held_path(run_dir, relative, entry)
        if held.is_file():
            return held
        raise EvidenceError(f"run {run_dir.name}: {relative} is held by run {entry['held_by']}, which has no such file")
    raise EvidenceError(f"run {run_dir.name} has no file {relative}")


def check_root(root: Path) -> Path:
    """An evidence store: a folder holding runs/ or accepted.json. Anything else is an error that says what the
    path is instead, never an empty success."""
    root = Path(root)
    if not root.exists():
        raise EvidenceError(f"evidence root {root} does not exist")
    if not root.is_dir():
        raise EvidenceError(f"evidence root {root} is a file, not a folder")
    if not (root / "runs").is_dir() and not (root / "accepted.json").is_file():
        what = "is empty" if not any(root.iterdir()) else "holds neither runs/ nor accepted.json"
        raise EvidenceError(f"evidence root {root} {what}: it is not an evidence store")
    return root


def all_run_dirs(root: Path = EVIDENCE_ROOT) -> list[Path]:
    check_root(root)
    return sorted(p for kind in ("runs", "failed") for p in (Path(root) / kind).glob("*") if p.is_dir())


def verify(root: Path = EVIDENCE_ROOT) -> list[str]:
    """Every manifest and hash under the store, and accepted.json's references."""
    problems = [problem for run_dir in all_run_dirs(root) for problem in verify_run(run_dir)]
    for stem, run_id in read_accepted(root).items():
        if not (Path(root) / "runs" / run_id).is_dir():
            problems.append(f"accepted.json: {stem} names run {run_id}, which is not under runs/")
    return problems


def read_accepted(root: Path = EVIDENCE_ROOT) -> dict:
    path = check_root(root) / "accepted.json"
    return read_json(path) if path.exists() else {}


def run_dir(run_id: str, root: Path = EVIDENCE_ROOT) -> Path:
    """The directory of an existing run; a clear error for an unknown id."""
    path = Path(root) / "runs" / run_id
    if not run_id or not path.is_dir():
        known = ", ".join(p.name for p in sorted((Path(root) / "runs").glob("*"))) or "none"
        raise EvidenceError(f"unknown run_id {run_id!r}: no such run under {Path(root) / 'runs'} (known: {known})")
    return path


def accepted_run(stem: str, root: Path = EVIDENCE_ROOT) -> Path:
    accepted = read_accepted(root)
    if stem not in accepted:
        raise EvidenceError(f"no accepted run for {stem!r} in {Path(root) / 'accepted.json'}")
    return run_dir(accepted[stem], root)


ACCEPT_NOTES = "accepted_notes.json"


def acceptance_problems(path: Path) -> list[str]:
    """Why a passed, sealed run should not become a chapter's evidence without --force: made from
    uncommitted code, code that differs from its commit, or clocks that dropped during timing."""
    from launchlab.store.provenance import source_tree_sha256_at
    from launchlab.store.record import RunRecord

    record = RunRecord.read(path)
    problems = []
    if not record.from_committed_code:
        problems.append(f"it was made from uncommitted code (git commit {record.git_commit!r})")
    else:
        committed = source_tree_sha256_at(record.git_commit)
        if committed is not None and committed != record.source_tree_sha256:
            problems.append(f"its source-tree hash differs from that of commit {record.git_commit}")
    if record.clocks_dropped:
        problems.append("its SM clock dropped during timing")
    return problems


def accept(stem: str, run_id: str, root: Path = EVIDENCE_ROOT, force: bool = False, reason: str = "") -> None:
    """Name a sealed, verified run whose validation passed as the evidence of `stem`.

    A run from uncommitted code or whose clocks dropped is refused unless `force` with a `reason`,
    which is recorded in accepted_notes.json."""
    from launchlab.store.record import RunRecord

    path = run_dir(run_id, root)
    record = RunRecord.read(path)
    if record.verdict != "passed":
        raise EvidenceError(f"run {run_id} cannot be accepted: its validation verdict is {record.verdict!r}, not 'passed'")
    if record.chapter != stem:
        raise EvidenceError(f"run {run_id} belongs to chapter {record.chapter!r}, not {stem!r}")
    problems = verify_run(path)
    if problems:
        raise EvidenceError(f"run {run_id} does not verify: {problems[0]}")
    objections = acceptance_problems(path)
    if objections and not force:
        raise EvidenceError(f"run {run_id} is refused: {'; '.join(objections)} (accept --force --reason TEXT to override)")
    if objections and not reason.strip():
        raise EvidenceError("--force needs --reason TEXT, which is recorded with the acceptance")
    if objections:
        notes_path = Path(root) / ACCEPT_NOTES
        notes = read_json(notes_path) if notes_path.exists() else {}
        notes[run_id] = {"stem": stem, "overrode": objections, "reason": reason.strip()}
        atomic_write(notes_path, to_json(notes))
    accepted = read_accepted(root)
    accepted[stem] = run_id
    atomic_write(Path(root) / "accepted.json", to_json(accepted))


def move_to_failed(run_id: str, reason: str, root: Path = EVIDENCE_ROOT) -> Path:
    """Keep a failed run apart, labelled, sealed; it is never pooled with accepted runs."""
    source = run_dir(run_id, root)
    target = Path(root) / "failed" / run_id
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise EvidenceError(f"failed/{run_id} exists already")
    if (source / MANIFEST).exists():
        raise EvidenceError(f"run {run_id} is sealed; a sealed run stays where it is")
    (source / "REASON.txt").write_text(reason.strip() + "\n")
    shutil.move(str(source), str(target))
    seal(target)
    return target


def atomic_write(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(temporary, path)


def archive_run(path: Path, directory: Path) -> Path:
    """<directory>/<RUN_ID>.tar.gz of a sealed run, laid out relative to the repository root
    (`tar xzf` there restores evidence/runs/<RUN_ID> or evidence/failed/<RUN_ID>)."""
    path = Path(path)
    if not (path / MANIFEST).exists():
        raise EvidenceError(f"run {path.name} is not sealed; only a sealed run is archived")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{path.name}.tar.gz"
    if target.exists():
        raise EvidenceError(f"{target} exists already")
    with tarfile.open(target, "w:gz") as archive:
        archive.add(path, arcname=f"evidence/{path.parent.name}/{path.name}")
    return target
