"""The command line keeps evidence safe and fails in one line: nothing is written before a command's checks pass,
every command honours --root, and every expected failure is `error: ...` naming the file or thing, exit code 2.

Runs are private copies of the committed chapter 1 run under tmp_path; the committed evidence is never touched."""
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import __main__ as cli
from launchlab.analysis import open_run
from launchlab.gpu import device
from launchlab.store import evidence, files

REPO_ROOT = Path(__file__).resolve().parents[1]
RUN_ID = evidence.read_accepted(evidence.EVIDENCE_ROOT)["ordinary_launches"]
SAMPLES = "samples/timing.jsonl.gz"


@pytest.fixture
def store(tmp_path) -> Path:
    """An evidence store holding a copy of the accepted chapter 1 run, accepted."""
    root = tmp_path / "evidence"
    shutil.copytree(evidence.EVIDENCE_ROOT / "runs" / RUN_ID, root / "runs" / RUN_ID)
    (root / "accepted.json").write_text(json.dumps({"ordinary_launches": RUN_ID}))
    return root


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def fails_in_one_line(capsys, argv, *expected) -> str:
    """Run the command line; it must exit 2 with a single `error:` line on stderr that holds every `expected`."""
    assert cli.main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in err, (text, err)
    return err


def reseal(run: Path) -> None:
    """Rewrite the manifest over the run's current bytes: damage the hashes alone cannot see."""
    (run / evidence.MANIFEST).write_text(evidence.to_json(evidence.build_manifest(run)))


# --- seal: nothing written before the checks pass ------------------------------------------------------------------

def test_seal_of_a_sealed_run_writes_nothing(store, tmp_path, capsys):
    notebook = tmp_path / "out.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    before = snapshot(store)
    fails_in_one_line(capsys, ["--root", store, "seal", RUN_ID, "--notebook", notebook], "already sealed")
    assert snapshot(store) == before and evidence.verify(store) == []


def test_seal_with_a_broken_notebook_writes_nothing_and_names_it(store, tmp_path, capsys):
    writer = evidence.RunWriter("20990101T000000Z-open", store)
    writer.write_json("run.json", {"x": 1})
    notebook = tmp_path / "broken.ipynb"
    notebook.write_text('{"cells": [')
    fails_in_one_line(capsys, ["--root", store, "seal", writer.run_id, "--notebook", notebook], str(notebook),
                      "not valid JSON")
    assert not (writer.path / "notebook.ipynb").exists() and not (writer.path / evidence.MANIFEST).exists()
    fails_in_one_line(capsys, ["--root", store, "seal", writer.run_id, "--notebook", tmp_path / "none.ipynb"],
                      "none.ipynb: missing")


def test_seal_never_replaces_a_notebook_the_run_holds(store, tmp_path, capsys):
    writer = evidence.RunWriter("20990101T000001Z-open", store)
    writer.write_text("notebook.ipynb", "{}")
    notebook = tmp_path / "out.ipynb"
    notebook.write_text("{}")
    fails_in_one_line(capsys, ["--root", store, "seal", writer.run_id, "--notebook", notebook], "never overwritten")
    assert (writer.path / "notebook.ipynb").read_text() == "{}" and not (writer.path / evidence.MANIFEST).exists()


# --- --root: every command, and what a root that is no store is ----------------------------------------------------

COMMANDS = [["verify"], ["analyze", RUN_ID], ["execute", "ordinary_launches"], ["seal", RUN_ID],
            ["accept", "ordinary_launches", RUN_ID], ["claims"], ["status"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_refuses_a_root_that_is_no_evidence_store(command, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    fails_in_one_line(capsys, ["--root", empty, *command], f"evidence root {empty} is empty")
    fails_in_one_line(capsys, ["--root", REPO_ROOT, *command], "holds neither runs/ nor accepted.json")
    fails_in_one_line(capsys, ["--root", REPO_ROOT / "README.md", *command], "README.md is a file, not a folder")
    fails_in_one_line(capsys, ["--root", tmp_path / "nowhere", *command], "does not exist")
    assert not any(empty.iterdir())


def test_claims_never_writes_into_the_repository_for_another_root(store, capsys):
    """Whether the claims refresh takes the evidence root or not, a scratch root leaves the repository's claims
    registry and downloads as they are: with the keyword it works in the scratch root, without it it refuses."""
    watched = [REPO_ROOT / "evidence/claims/claims.yaml", *sorted((REPO_ROOT / "book/_static/claims").glob("*"))]
    before = {path: path.read_bytes() for path in watched if path.is_file()}
    code = cli.main(["--root", str(store), "claims"])
    err = capsys.readouterr().err
    assert {path: path.read_bytes() for path in before} == before
    assert code == 0 or (code == 2 and "--root" in err and err.count("\n") == 1), err


# --- files that do not decode are named ----------------------------------------------------------------------------

def truncate_samples(store: Path) -> Path:
    run = store / "runs" / RUN_ID
    data = (run / SAMPLES).read_bytes()
    (run / SAMPLES).write_bytes(data[: len(data) // 2])
    reseal(run)
    return run


def test_a_cut_short_sample_file_is_named_by_verify_analyze_and_open(store, capsys):
    run = truncate_samples(store)
    assert cli.main(["--root", str(store), "verify"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {RUN_ID}/{SAMPLES}: cut short" in out, out
    fails_in_one_line(capsys, ["--root", store, "analyze", RUN_ID], f"{RUN_ID}/{SAMPLES}: cut short")
    with pytest.raises(evidence.EvidenceError, match=f"{SAMPLES}: cut short"):
        open_run(run)


def test_a_corrupt_gzip_and_a_bad_jsonl_line_are_named(tmp_path):
    corrupt = tmp_path / "a.jsonl.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"\0" * 30)
    with pytest.raises(evidence.EvidenceError, match="a.jsonl.gz: unreadable"):
        files.read_jsonl(corrupt)
    lines = tmp_path / "b.jsonl.gz"
    lines.write_bytes(gzip.compress(b'{"x": 1}\n{"x": \n'))
    with pytest.raises(evidence.EvidenceError, match="b.jsonl.gz: not JSON lines"):
        files.read_jsonl(lines)


def test_a_broken_run_json_is_named(store, capsys):
    run = store / "runs" / RUN_ID
    (run / "run.json").write_text('{"chapter": "ordinary_launches", broken')
    reseal(run)
    fails_in_one_line(capsys, ["--root", store, "analyze", RUN_ID], "run.json: not valid JSON")
    fails_in_one_line(capsys, ["--root", store, "status"], "run.json: not valid JSON")
    assert cli.main(["--root", str(store), "verify"]) == 1
    assert f"FAIL {RUN_ID}/run.json: not valid JSON" in capsys.readouterr().out


def test_a_broken_accepted_json_is_named(store, capsys):
    (store / "accepted.json").write_text("{")
    fails_in_one_line(capsys, ["--root", store, "verify"], "accepted.json: not valid JSON")


def test_expected_failures_need_no_traceback_from_a_subprocess(tmp_path):
    """The module run as a program: one line on stderr, exit code 2."""
    done = subprocess.run([sys.executable, "-m", "launchlab", "--root", str(REPO_ROOT / "README.md"), "verify"],
                          capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is a file, not a folder" in done.stderr


# --- execute: checked before papermill starts; its failure is one line -----------------------------------------------

@pytest.fixture
def gpu(monkeypatch):
    """Say whether a GPU is visible (set .visible), and record papermill calls instead of running them."""
    import papermill

    class Stand:
        visible = False
        calls = []
        run = None        # papermill's stand-in: called with the parameters, may raise

    stand = Stand()
    monkeypatch.setattr(device, "gpu_status", lambda: (stand.visible, "Test GPU" if stand.visible else "test: none"))

    def execute_notebook(source, output, parameters, **kwargs):
        stand.calls.append(parameters)
        if stand.run:
            stand.run(Path(output), parameters)

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    monkeypatch.setenv("LAUNCHLAB_EVIDENCE_ROOT", str(evidence.EVIDENCE_ROOT))  # execute sets it; restored after
    return stand


@pytest.mark.parametrize("mode, expected", [("gpu", "execute needs a visible CUDA GPU: test: none"),
                                            ("auto", "no GPU is visible (test: none), so --mode auto would read")])
def test_execute_without_a_gpu_is_one_line_and_writes_nothing(store, gpu, capsys, mode, expected):
    before = snapshot(store)
    fails_in_one_line(capsys, ["--root", store, "execute", "ordinary_launches", "--mode", mode], expected)
    assert snapshot(store) == before and not gpu.calls


@pytest.mark.parametrize("visible", [True, False])
@pytest.mark.parametrize("given, expected", [
    (["-p", "no_such", "1"], "unknown parameter(s) for ordinary_launches: no_such (known: fixture_seed,"),
    (["-p", "fixture_seed", "many"], "parameter fixture_seed of ordinary_launches must be int"),
    (["-p", "shapes", "big"], "'big' is not a shape ROWSxCOLS")])
def test_execute_checks_parameters_before_anything_runs(store, gpu, capsys, visible, given, expected):
    gpu.visible = visible
    before = snapshot(store)
    fails_in_one_line(capsys, ["--root", store, "execute", "ordinary_launches", *given], expected)
    assert snapshot(store) == before and not gpu.calls


def test_execute_passes_typed_parameters(store, gpu, capsys):
    gpu.visible = True
    gpu.run = lambda output, parameters: output.write_text("{}")
    cli.main(["--root", str(store), "execute", "ordinary_launches", "-p", "fixture_seed", "7"])
    capsys.readouterr()
    assert gpu.calls[0]["fixture_seed"] == 7 and gpu.calls[0]["mode"] == "gpu"


def test_a_failed_execution_is_one_line_and_its_run_goes_to_failed_with_the_traceback(store, gpu, capsys):
    from papermill.exceptions import PapermillExecutionError

    def fail_after_writing_a_run(output, parameters):
        writer = evidence.RunWriter(parameters["run_id"], store)
        writer.write_json("run.json", {"chapter": "ordinary_launches"})
        output.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        raise PapermillExecutionError(3, 3, "open_chapter(...)", "ValidationFailed",
                                      "row4 disagrees with its oracle\nat 12 elements", ["Traceback (cell)"])

    gpu.visible, gpu.run = True, fail_after_writing_a_run
    err = fails_in_one_line(capsys, ["--root", store, "execute", "ordinary_launches"],
                            "executing ordinary_launches failed (ValidationFailed: row4 disagrees with its oracle at 12",
                            str(store / "failed"))
    run_id = gpu.calls[0]["run_id"]
    failed = store / "failed" / run_id
    assert str(failed) in err and not (store / "runs" / run_id).exists()
    assert "PapermillExecutionError" in (failed / "REASON.txt").read_text()
    assert (failed / "notebook.ipynb").exists() and evidence.verify_run(failed) == []


def test_a_failure_before_any_run_says_no_run_was_written(store, gpu, capsys):
    def fail(output, parameters):
        raise RuntimeError("kernel died")

    gpu.visible, gpu.run = True, fail
    before = snapshot(store)
    fails_in_one_line(capsys, ["--root", store, "execute", "ordinary_launches"], "(kernel died); no run was written")
    assert {k: v for k, v in snapshot(store).items() if not k.startswith("staging/")} == before


# --- the book build stops on broken evidence, naming the file --------------------------------------------------------

def test_book_build_hook_names_a_broken_file_in_one_line(store):
    from sphinx.errors import ExtensionError

    from launchlab.present.sphinx_ext import check_evidence

    check_evidence(store)
    truncate_samples(store)
    with pytest.raises(ExtensionError) as caught:
        check_evidence(store)
    message = str(caught.value)
    assert f"{RUN_ID}/{SAMPLES}: cut short" in message and "\n" not in message
    (store / "accepted.json").write_text("{")
    with pytest.raises(ExtensionError, match="accepted.json: not valid JSON"):
        check_evidence(store)


@pytest.mark.slow
def test_book_build_stops_at_once_on_broken_evidence(tmp_path):
    """The real build, pointed at a damaged copy of the evidence: it stops before executing a notebook."""
    root = tmp_path / "evidence"
    shutil.copytree(evidence.EVIDENCE_ROOT, root, ignore=shutil.ignore_patterns("staging"))
    truncate_samples(root)
    book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if book is None:
        pytest.skip("no jupyter-book beside this Python")
    done = subprocess.run([book, "build", "--all", "--path-output", str(tmp_path / "out"), str(REPO_ROOT)],
                          capture_output=True, text=True, timeout=600, cwd=REPO_ROOT,
                          env={**os.environ, "LAUNCHLAB_EVIDENCE_ROOT": str(root)})
    output = done.stdout + done.stderr
    assert done.returncode != 0 and f"{RUN_ID}/{SAMPLES}: cut short" in output, output[-3000:]
    assert "Executing notebook" not in output and "executing outdated notebooks" not in output.lower()
