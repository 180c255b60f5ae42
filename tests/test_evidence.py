"""The evidence store: manifests, tamper detection, acceptance, never overwriting."""
import json
import shutil
from pathlib import Path

import pytest

from launchlab.store import evidence
from launchlab.store.evidence import EvidenceError, RunWriter
from launchlab.store.record import RecordError, RunRecord

COMMITTED = evidence.EVIDENCE_ROOT


def record(run_id, chapter="ordinary_launches", verdict="passed", commit="abc1234", clocks_dropped=False) -> dict:
    """A run.json with every core field (values a test can recognise, not a real device)."""
    return RunRecord(chapter=chapter, run_id=run_id, parameters={}, protocol={}, host_path="test",
                     device={"name": "Test GPU", "sm_count": 1, "l2_bytes": 1, "compute_capability": "9.0"},
                     environment={"libraries": {}}, git_commit=commit, source_tree_sha256="0" * 64,
                     clocks_dropped=clocks_dropped, validation={"verdict": verdict}).to_dict()


def make_run(root: Path, run_id="20260101T000000Z-test", verdict="passed", chapter="ordinary_launches",
             commit="abc1234", clocks_dropped=False) -> Path:
    writer = RunWriter(run_id, root)
    writer.write_json("run.json", record(run_id, chapter, verdict, commit, clocks_dropped))
    writer.write_jsonl("samples/a.jsonl", [{"x": 1}, {"x": 2}])
    writer.write_text("notes/deep/file.txt", "hello")
    evidence.seal(writer.path)
    return writer.path


@pytest.fixture
def committed_copy(tmp_path):
    """A private copy of the committed evidence store, safe to damage."""
    shutil.copytree(COMMITTED, tmp_path / "evidence", ignore=shutil.ignore_patterns("staging"))
    return tmp_path / "evidence"


def test_manifest_round_trip(tmp_path):
    path = make_run(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    assert set(manifest["files"]) == {"run.json", "samples/a.jsonl", "notes/deep/file.txt"}
    assert manifest == evidence.build_manifest(path)
    assert evidence.verify(tmp_path) == []
    entry = manifest["files"]["notes/deep/file.txt"]
    assert entry == {"sha256": evidence.sha256_file(path / "notes/deep/file.txt"), "bytes": 5}


def test_committed_evidence_verifies():
    assert evidence.verify(COMMITTED) == []


@pytest.mark.slow
def test_changing_any_byte_of_any_committed_run_file_is_named(committed_copy):
    for run_dir in evidence.all_run_dirs(committed_copy):
        for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
            original = path.read_bytes()
            damaged = bytearray(original)
            damaged[len(damaged) // 2] ^= 0x01
            path.write_bytes(bytes(damaged))
            relative = path.relative_to(run_dir).as_posix()
            problems = evidence.verify_run(run_dir)  # this run's files (the whole store is verified at the end)
            if relative == "manifest.json":
                assert problems, "a damaged manifest must not verify"
            else:
                assert any(f"{run_dir.name}/{relative}" in p for p in problems), (relative, problems)
            path.write_bytes(original)
    assert evidence.verify(committed_copy) == []


def test_added_and_removed_files_are_named(tmp_path):
    path = make_run(tmp_path)
    (path / "extra.txt").write_text("not listed")
    (path / "samples/a.jsonl").unlink()
    problems = evidence.verify(tmp_path)
    assert any("extra.txt: not in the manifest" in p for p in problems)
    assert any("samples/a.jsonl: listed in the manifest but missing" in p for p in problems)


def test_accept_refuses_failed_validation_and_keeps_accepted_json(tmp_path):
    make_run(tmp_path, "20260101T000000Z-good")
    make_run(tmp_path, "20260101T000001Z-bad", verdict="failed")
    evidence.accept("ordinary_launches", "20260101T000000Z-good", tmp_path)
    before = (tmp_path / "accepted.json").read_bytes()
    with pytest.raises(EvidenceError, match="validation verdict is 'failed'"):
        evidence.accept("ordinary_launches", "20260101T000001Z-bad", tmp_path)
    assert (tmp_path / "accepted.json").read_bytes() == before


def test_accept_refuses_unsealed_or_tampered_or_other_chapter(tmp_path):
    writer = RunWriter("20260101T000002Z-open", tmp_path)
    writer.write_json("run.json", record("20260101T000002Z-open"))
    with pytest.raises(EvidenceError, match="unsealed"):
        evidence.accept("ordinary_launches", "20260101T000002Z-open", tmp_path)
    make_run(tmp_path, "20260101T000003Z-other", chapter="graphs")
    with pytest.raises(EvidenceError, match="belongs to chapter 'graphs'"):
        evidence.accept("ordinary_launches", "20260101T000003Z-other", tmp_path)


def test_existing_run_and_file_never_overwritten(tmp_path):
    path = make_run(tmp_path)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    with pytest.raises(EvidenceError, match="never overwritten"):
        RunWriter(path.name, tmp_path)
    writer = RunWriter("20260101T000009Z-fresh", tmp_path)
    writer.write_text("a.txt", "first")
    with pytest.raises(EvidenceError, match="written once"):
        writer.write_text("a.txt", "second")
    assert (writer.path / "a.txt").read_text() == "first"
    evidence.seal(writer.path)
    with pytest.raises(EvidenceError, match="already sealed"):
        evidence.seal(writer.path)
    assert before == {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_writer_refuses_paths_outside_the_run(tmp_path):
    writer = RunWriter("20260101T000010Z-x", tmp_path)
    with pytest.raises(EvidenceError, match="outside"):
        writer.write_text("../escape.txt", "no")


def test_unknown_run_id_is_named(tmp_path):
    make_run(tmp_path)
    with pytest.raises(EvidenceError, match="unknown run_id '20990101T000000Z-nope'.*known: 20260101T000000Z-test"):
        evidence.run_dir("20990101T000000Z-nope", tmp_path)


@pytest.mark.parametrize("bad", ["", "latest", "2026-01-01-x", "20260101T000000Z", "20260101T000000Z-UPPER"])
def test_invalid_run_ids_rejected(tmp_path, bad):
    with pytest.raises(EvidenceError, match="invalid run id"):
        RunWriter(bad, tmp_path)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_failed_run_is_moved_apart_sealed_and_labelled(tmp_path):
    writer = RunWriter("20260101T000011Z-broken", tmp_path)
    writer.write_json("run.json", {"chapter": "ordinary_launches", "validation": {"verdict": "failed"}})
    target = evidence.move_to_failed(writer.run_id, "validation before timing failed", tmp_path)
    assert target == tmp_path / "failed" / writer.run_id and not writer.path.exists()
    assert (target / "REASON.txt").read_text().startswith("validation before timing failed")
    assert evidence.verify(tmp_path) == []
    with pytest.raises(EvidenceError, match="failed/"):
        RunWriter(writer.run_id, tmp_path)


def test_archive_restores_a_sealed_run_and_refuses_an_open_one(tmp_path):
    import tarfile

    path = make_run(tmp_path / "evidence")
    target = evidence.archive_run(path, tmp_path / "out")
    restored = tmp_path / "elsewhere"
    with tarfile.open(target) as archive:
        archive.extractall(restored, filter="data")
    assert evidence.verify(restored / "evidence") == []
    assert (restored / "evidence/runs" / path.name / "run.json").read_bytes() == (path / "run.json").read_bytes()
    with pytest.raises(EvidenceError, match="exists already"):
        evidence.archive_run(path, tmp_path / "out")
    writer = RunWriter("20260101T000020Z-open", tmp_path / "evidence")
    with pytest.raises(EvidenceError, match="not sealed"):
        evidence.archive_run(writer.path, tmp_path / "out")


def test_accept_refuses_uncommitted_code_and_dropped_clocks_unless_forced_with_a_reason(tmp_path):
    make_run(tmp_path, "20260101T000010Z-dirty", commit="abc1234+worktree")
    make_run(tmp_path, "20260101T000011Z-hot", clocks_dropped=True)
    with pytest.raises(EvidenceError, match="uncommitted code"):
        evidence.accept("ordinary_launches", "20260101T000010Z-dirty", tmp_path)
    with pytest.raises(EvidenceError, match="clock dropped"):
        evidence.accept("ordinary_launches", "20260101T000011Z-hot", tmp_path)
    with pytest.raises(EvidenceError, match="--reason"):
        evidence.accept("ordinary_launches", "20260101T000011Z-hot", tmp_path, force=True)
    assert not (tmp_path / "accepted.json").exists()
    evidence.accept("ordinary_launches", "20260101T000011Z-hot", tmp_path, force=True, reason="test override")
    notes = json.loads((tmp_path / evidence.ACCEPT_NOTES).read_text())
    assert notes["20260101T000011Z-hot"]["reason"] == "test override"
    assert evidence.read_accepted(tmp_path) == {"ordinary_launches": "20260101T000011Z-hot"}


def test_a_missing_root_is_an_error_not_an_empty_success(tmp_path):
    with pytest.raises(EvidenceError, match="does not exist"):
        evidence.verify(tmp_path / "nowhere")
    from launchlab.__main__ import main
    assert main(["--root", str(tmp_path / "nowhere"), "verify"]) == 2


def test_run_record_names_missing_and_unknown_fields():
    data = record("20260101T000000Z-x")
    del data["environment"]
    with pytest.raises(RecordError, match="environment"):
        RunRecord.from_dict(data)
    with pytest.raises(RecordError, match="outside the run record"):
        RunRecord.from_dict({**record("20260101T000000Z-x"), "surprise": 1})


def test_compressed_jsonl_is_reproducible_and_readable(tmp_path):
    from launchlab.store.runs import read_jsonl

    first = RunWriter("20260101T000020Z-a", tmp_path).write_jsonl("s.jsonl.gz", [{"x": 1}])
    second = RunWriter("20260101T000021Z-b", tmp_path).write_jsonl("s.jsonl.gz", [{"x": 1}])
    assert first.read_bytes() == second.read_bytes() and read_jsonl(first) == [{"x": 1}]
