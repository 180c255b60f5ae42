"""The accepted runs at a glance, and whether the kernels they ran are still today's."""
from __future__ import annotations

from pathlib import Path

from launchlab.store import evidence
from launchlab.store.files import read_json
from launchlab.store.record import RecordError, RunRecord


def kernel_drift(run_dir: Path) -> list[str]:
    """Build labels whose stored source.cu differs from today's expanded kernels/<family>.cu."""
    from launchlab.gpu.build import KERNEL_DIR, expand_source

    changed = []
    for record_file in sorted(Path(run_dir).glob("builds/*/record.json")):
        family = read_json(record_file)["family"]
        stored = (record_file.parent / "source.cu").read_text()
        current_path = KERNEL_DIR / f"{family}.cu"
        if not current_path.exists() or expand_source(current_path) != stored:
            changed.append(f"{record_file.parent.name} ({family})")
    return changed


def accepted_status(root: Path = evidence.EVIDENCE_ROOT) -> list[dict]:
    rows = []
    for stem, run_id in sorted(evidence.read_accepted(root).items()):
        path = evidence.run_dir(run_id, root)
        stamp = run_id.split("-")[0]
        row = {"chapter": stem, "run_id": run_id, "date": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}"}
        try:
            record = RunRecord.read(path)
        except RecordError as error:
            rows.append({**row, "commit": None, "device": f"unreadable record ({error})", "clocks_dropped": None,
                         "kernels_current": False})
            continue
        rows.append({**row, "commit": record.git_commit, "device": record.device_name,
                     "clocks_dropped": bool(record.clocks_dropped), "kernels_current": not kernel_drift(path)})
    return rows
