"""Recording a replicate: checked, listed, and stored compactly without losing what analysis reads."""
import json
import shutil

import pytest

from launchlab.__main__ import main
from launchlab.analysis import analyze
from launchlab.store import evidence, replicates
from launchlab.store.runs import Run


def scratch_store(tmp_path, stem="graphs"):
    """A scratch store holding a chapter's accepted run and, not yet recorded, a whole copy of it standing in for a
    later run of the chapter (the committed replicates are already compact): (root, accepted id, copy's id)."""
    root = tmp_path / "evidence"
    accepted_id = evidence.read_accepted()[stem]
    copy_id = "20991231T000000Z-" + accepted_id.split("-", 1)[1]
    shutil.copytree(evidence.run_dir(accepted_id), root / "runs" / accepted_id)
    shutil.copytree(evidence.run_dir(accepted_id), root / "runs" / copy_id)
    (root / "accepted.json").write_text(json.dumps({stem: accepted_id}))
    return root, accepted_id, copy_id


@pytest.fixture
def store(tmp_path):
    return scratch_store(tmp_path)


def test_a_recorded_replicate_drops_what_its_accepted_run_holds_and_still_verifies_and_analyses(store, capsys):
    root, accepted_id, replicate_id = store
    replicate = root / "runs" / replicate_id
    before = sum(p.stat().st_size for p in replicate.rglob("*") if p.is_file())
    assert main(["--root", str(root), "replicate", accepted_id, replicate_id]) == 0
    after = sum(p.stat().st_size for p in replicate.rglob("*") if p.is_file())
    manifest = json.loads((replicate / evidence.MANIFEST).read_text())["files"]
    held = [path for path, entry in manifest.items() if "held_by" in entry]
    assert (replicate / "notebook.ipynb").exists()
    assert held and all(path.endswith((".cu", ".ptx.gz", ".sass.gz")) or path == "validation.json" for path in held)
    assert not any((replicate / path).exists() for path in held)
    assert any(path.endswith("source.cu") for path in held) and "validation.json" in held
    assert Run.read(replicate).json("validation.json") == Run.read(root / "runs" / accepted_id).json("validation.json")
    assert after < before
    assert evidence.verify(root) == [] and analyze(replicate) == []
    assert replicates.read_replicates(root) == {accepted_id: [replicate_id]}
    assert main(["--root", str(root), "replicate", accepted_id, replicate_id]) == 2
    assert "already a replicate" in capsys.readouterr().err


def test_a_held_file_that_changes_in_the_accepted_run_is_found(store):
    root, accepted_id, replicate_id = store
    replicates.record_replicate(accepted_id, replicate_id, root)
    manifest = json.loads((root / "runs" / replicate_id / evidence.MANIFEST).read_text())["files"]
    path = next(p for p, entry in manifest.items() if "held_by" in entry)
    (root / "runs" / accepted_id / path).write_bytes(b"changed")
    assert any(f"{replicate_id}/{path}: held by run {accepted_id}, whose copy differs" == p for p in evidence.verify(root))


def test_a_run_of_another_chapter_or_a_run_that_is_not_accepted_is_refused(store, tmp_path):
    root, accepted_id, replicate_id = store
    other = evidence.read_accepted()["ordinary_launches"]
    shutil.copytree(evidence.run_dir(other), root / "runs" / other)
    with pytest.raises(evidence.EvidenceError, match="is a run of ordinary_launches"):
        replicates.record_replicate(accepted_id, other, root)
    with pytest.raises(evidence.EvidenceError, match="is no chapter's accepted run"):
        replicates.record_replicate(replicate_id, accepted_id, root)



def as_if_on(run_dir, device_name: str) -> None:
    """Rewrite a copied run's device name and its manifest entry, so that it verifies as a run on that GPU."""
    record = json.loads((run_dir / "run.json").read_text())
    record["device"]["name"] = device_name
    (run_dir / "run.json").write_text(json.dumps(record))
    manifest = json.loads((run_dir / evidence.MANIFEST).read_text())
    manifest["files"]["run.json"] = {"bytes": (run_dir / "run.json").stat().st_size,
                                     "sha256": evidence.sha256_file(run_dir / "run.json")}
    (run_dir / evidence.MANIFEST).write_text(json.dumps(manifest))
    assert evidence.verify_run(run_dir) == []


def test_a_run_on_another_gpu_model_is_no_replicate_but_is_listed_apart(store, capsys):
    root, accepted_id, run_id = store
    run = root / "runs" / run_id
    as_if_on(run, "NVIDIA H100 80GB HBM3")
    files_before = sorted(p.name for p in run.rglob("*"))
    with pytest.raises(evidence.EvidenceError, match="ran on an NVIDIA H100 80GB HBM3, .* on an NVIDIA H200"):
        replicates.record_replicate(accepted_id, run_id, root)
    assert replicates.read_replicates(root) == {}
    assert sorted(p.name for p in run.rglob("*")) == files_before
    assert main(["--root", str(root), "other-gpu", accepted_id, run_id]) == 0
    assert replicates.read_other_gpus(root) == {accepted_id: [run_id]} and replicates.read_replicates(root) == {}
    assert evidence.verify(root) == [] and analyze(run) == []
    assert main(["--root", str(root), "other-gpu", accepted_id, run_id]) == 2
    assert "already a run on another GPU" in capsys.readouterr().err


def test_a_run_on_the_same_gpu_model_is_refused_as_another_gpu(store):
    root, accepted_id, replicate_id = store
    with pytest.raises(evidence.EvidenceError, match="same GPU model .* record it as a replicate"):
        replicates.record_other_gpu(accepted_id, replicate_id, root)
    assert replicates.read_other_gpus(root) == {}


def test_a_chapter_whose_summary_reads_the_validation_report_still_analyses_when_it_is_held(tmp_path):
    """Example A's summary counts the checks of validation.json: a replicate that leaves the report to its accepted
    run still re-analyses from its own samples."""
    root, accepted_id, replicate_id = scratch_store(tmp_path, "example_a_pointwise")
    replicates.record_replicate(accepted_id, replicate_id, root)
    replicate = root / "runs" / replicate_id
    assert not (replicate / "validation.json").exists()
    assert evidence.run_file(replicate, "validation.json") == root / "runs" / accepted_id / "validation.json"
    assert analyze(replicate) == []


def test_compact_applies_to_runs_listed_before_and_frees_nothing_twice(store, capsys):
    root, accepted_id, replicate_id = store
    (root / replicates.REPLICATES_FILE).write_text(json.dumps({accepted_id: [replicate_id]}))  # listed, not compact
    replicate = root / "runs" / replicate_id
    assert main(["--root", str(root), "compact"]) == 0
    assert not (replicate / "validation.json").exists() and not any(replicate.glob("builds/*/source.cu"))
    assert "1 listed run(s) compacted" in capsys.readouterr().out
    assert evidence.verify(root) == []
    assert replicates.compact_listed(root) == {replicate_id: 0}


def test_a_file_in_neither_run_is_named(store):
    root, accepted_id, replicate_id = store
    replicates.record_replicate(accepted_id, replicate_id, root)
    replicate = root / "runs" / replicate_id
    with pytest.raises(evidence.EvidenceError, match=f"run {replicate_id} has no file nothing.json"):
        evidence.run_file(replicate, "nothing.json")
    (root / "runs" / accepted_id / "validation.json").unlink()
    with pytest.raises(evidence.EvidenceError, match=f"validation.json is held by run {accepted_id}, which has no such"):
        Run.read(replicate).json("validation.json")
