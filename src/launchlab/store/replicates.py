"""Replicates and runs on other GPUs: further executions of an accepted run's chapter, recorded beside it and
stored compactly.

    python -m launchlab replicate <accepted run> <replicate run>
    python -m launchlab other-gpu <accepted run> <run on another GPU model>

checks that the run is a sealed, verified, passed run of the same chapter made from committed code, on the same
GPU model as the accepted run (a replicate, listed in evidence/replicates.json) or on another one (listed in
evidence/other_gpus.json), then lists it. Where the accepted run already holds a file byte for byte (a build's
expanded source, its PTX and SASS, the validation report), the new run drops its copy and its manifest says which
run holds it (`held_by`), so that verify still checks every byte and readers find it (evidence.run_file). Every
other file stays (its executed notebook too), so the run still re-analyses from its own samples. This rewrites
nothing but the new run's manifest, and only to say where a removed file lives.

    python -m launchlab compact

applies the same to every run already listed, for files HELD_ELSEWHERE has come to name since they were listed.
"""
from __future__ import annotations

from pathlib import Path

from launchlab.store import evidence
from launchlab.store.files import EvidenceError, read_json
from launchlab.store.record import RunRecord

REPLICATES_FILE = "replicates.json"
OTHER_GPUS_FILE = "other_gpus.json"
# A build's expanded source, and the outputs that the same source and options reproduce; the validation report,
# which holds the checks' outcomes and errors (deterministic for the chapter's seeds), not timings.
HELD_ELSEWHERE = ("source.cu", "module.ptx.gz", "module.sass.gz", "validation.json")


def read_replicates(root: Path = evidence.EVIDENCE_ROOT) -> dict[str, list[str]]:
    """{accepted run id: [replicate run ids]} from <root>/replicates.json ({} where the file does not exist)."""
    return _read_listing(Path(root) / REPLICATES_FILE)


def read_other_gpus(root: Path = evidence.EVIDENCE_ROOT) -> dict[str, list[str]]:
    """{accepted run id: [ids of runs of its chapter on other GPU models]} from <root>/other_gpus.json."""
    return _read_listing(Path(root) / OTHER_GPUS_FILE)


def _read_listing(path: Path) -> dict[str, list[str]]:
    if not path.exists():
        return {}
    listed = read_json(path)
    if not (isinstance(listed, dict) and all(isinstance(ids, list) and all(isinstance(i, str) for i in ids)
                                             for ids in listed.values())):
        raise EvidenceError(f"{path}: must map each accepted run id to a list of run ids")
    return listed


def replicate_problems(accepted: Path, replicate: Path, same_gpu: bool = True) -> list[str]:
    """Why `replicate` cannot be listed beside `accepted` (empty: it can): as a replicate (`same_gpu`), or as a run
    on another GPU model."""
    problems = [f"{replicate.name} does not verify: {p}" for p in evidence.verify_run(replicate)[:1]]
    first, second = RunRecord.read(accepted), RunRecord.read(replicate)
    if first.chapter != second.chapter:
        problems.append(f"{replicate.name} is a run of {second.chapter}, {accepted.name} of {first.chapter}")
    if same_gpu and first.device_name != second.device_name:
        problems.append(f"{replicate.name} ran on an {second.device_name}, {accepted.name} on an {first.device_name}: "
                        "a replicate repeats a run on the same GPU model (list it with other-gpu)")
    if not same_gpu and first.device_name == second.device_name:
        problems.append(f"{replicate.name} ran on the same GPU model as {accepted.name} ({first.device_name}): "
                        "record it as a replicate")
    if second.verdict != "passed":
        problems.append(f"{replicate.name}'s validation verdict is {second.verdict!r}, not 'passed'")
    if not second.from_committed_code:
        problems.append(f"{replicate.name} was made from uncommitted code ({second.git_commit!r})")
    if replicate.name == accepted.name:
        problems.append("a run cannot replicate itself")
    return problems


def compact(accepted: Path, replicate: Path) -> int:
    """Drop the replicate's copies of what the accepted run holds; return the bytes dropped."""
    manifest = read_json(replicate / evidence.MANIFEST)
    freed = 0
    for relative, entry in sorted(manifest["files"].items()):
        held = accepted / relative
        if "held_by" in entry or relative.rsplit("/", 1)[-1] not in HELD_ELSEWHERE or not held.is_file():
            continue
        if evidence.sha256_file(held) == entry["sha256"]:
            entry["held_by"] = accepted.name
            (replicate / relative).unlink()
            freed += entry["bytes"]
    evidence.atomic_write(replicate / evidence.MANIFEST, evidence.to_json(manifest))
    return freed


def compact_listed(root: Path = evidence.EVIDENCE_ROOT) -> dict[str, int]:
    """compact() every listed replicate and run on another GPU against its accepted run; {run id: bytes freed}."""
    freed = {}
    for listing in (REPLICATES_FILE, OTHER_GPUS_FILE):
        for accepted_id, run_ids in _read_listing(Path(root) / listing).items():
            accepted = evidence.run_dir(accepted_id, root)
            for run_id in run_ids:
                freed[run_id] = compact(accepted, evidence.run_dir(run_id, root))
    return freed


def record_replicate(accepted_id: str, replicate_id: str, root: Path = evidence.EVIDENCE_ROOT) -> dict:
    """Check, compact and list a replicate; an accepted run's replicates are never replaced, only added to."""
    return _record(accepted_id, replicate_id, root, REPLICATES_FILE, same_gpu=True)


def record_other_gpu(accepted_id: str, run_id: str, root: Path = evidence.EVIDENCE_ROOT) -> dict:
    """Check, compact and list a run of the accepted run's chapter on another GPU model."""
    return _record(accepted_id, run_id, root, OTHER_GPUS_FILE, same_gpu=False)


def _record(accepted_id: str, run_id: str, root: Path, listing: str, same_gpu: bool) -> dict:
    what = "a replicate" if same_gpu else "a run on another GPU"
    accepted, run = evidence.run_dir(accepted_id, root), evidence.run_dir(run_id, root)
    if accepted_id not in evidence.read_accepted(root).values():
        raise EvidenceError(f"{accepted_id} is no chapter's accepted run")
    problems = replicate_problems(accepted, run, same_gpu)
    if problems:
        raise EvidenceError(f"{run_id} cannot be recorded as {what} of {accepted_id}: {'; '.join(problems)}")
    listed = _read_listing(Path(root) / listing)
    if run_id in listed.get(accepted_id, []):
        raise EvidenceError(f"{run_id} is already {what} of {accepted_id}")
    compact(accepted, run)
    listed.setdefault(accepted_id, []).append(run_id)
    evidence.atomic_write(Path(root) / listing, evidence.to_json(listed))
    return listed
