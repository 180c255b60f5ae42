"""Command line: python -m launchlab {verify, analyze, execute, seal, accept, claims, status, replicate, other-gpu,
    compact, plan, compare}.

Every command honours --root (the evidence store; default evidence/): a root that does not exist, is a
file, or holds neither runs/ nor accepted.json is an error. Every expected failure ends as one line,
`error: ...` naming the file or thing, with exit code 2."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from launchlab.chapters import STEMS, available_stems, chapter
from launchlab.gpu import device
from launchlab.store import evidence
from launchlab.store.files import read_json

BOOK_DIR = evidence.REPO_ROOT / "book"


def command_verify(args) -> int:
    problems = evidence.verify(args.root)
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{len(evidence.all_run_dirs(args.root))} run(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def command_analyze(args) -> int:
    from launchlab.analysis import analyze

    run_dir = Path(args.run_dir)
    if not (run_dir / "run.json").exists():
        run_dir = evidence.run_dir(args.run_dir, args.root)  # a bare run id
    problems = analyze(run_dir)
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{run_dir.name}: summaries {'differ' if problems else 'reproduced exactly'}")
    return 1 if problems else 0


def seal_with_notebook(run_id: str, notebook: Path | None, root: Path) -> Path:
    """Store the executed notebook (its images removed: the figures are regenerated from the data) and seal.
    Everything is checked before anything is written: the run exists and is open, the notebook reads as JSON."""
    path = evidence.run_dir(run_id, root)
    if (path / evidence.MANIFEST).exists():
        raise evidence.EvidenceError(f"run {run_id} is already sealed; nothing was written")
    text = without_images(read_json(notebook)) if notebook is not None else None
    if text is not None:
        store_notebook(path, text)
    evidence.seal(path)
    return path


def store_notebook(run_path: Path, text: str) -> None:
    """notebook.ipynb in an open run, written once like every file of a run."""
    try:
        with open(run_path / "notebook.ipynb", "x") as out:
            out.write(text)
    except FileExistsError:
        raise evidence.EvidenceError(f"run {run_path.name} already holds notebook.ipynb; it is never overwritten") from None


def without_images(notebook: dict) -> str:
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for mime in [m for m in data if "image/" in m]:  # also glue's application/papermill.record/image/png
                data[mime] = "(image removed: regenerated from the run's data when the book is built)"
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def command_seal(args) -> int:
    print(f"sealed {seal_with_notebook(args.run_id, Path(args.notebook) if args.notebook else None, args.root)}")
    return 0


def command_accept(args) -> int:
    evidence.accept(args.stem, args.run_id, args.root, force=args.force, reason=args.reason or "")
    print(f"accepted {args.run_id} for {args.stem}")
    return 0


def notebook_parameters(stem: str, given: list | None) -> dict:
    """The -p NAME VALUE pairs, checked by the chapter's declaration and typed, before anything runs."""
    given = dict(given or [])
    declared = chapter(stem)
    typed = declared.parse_parameters(given)
    declared.variants(typed)  # the values themselves: a malformed shape list fails here, not after a build
    recorded = declared.recorded_parameters(typed)
    return {name: recorded[name] for name in given}


def require_gpu(mode: str) -> None:
    """execute makes a new run, so it needs a GPU whatever the mode; say so before papermill starts."""
    available, detail = device.gpu_status()
    if available:
        return
    if mode == "auto":
        raise device.NoGPUError(f"no GPU is visible ({detail}), so --mode auto would read the committed evidence, "
                                "which execute cannot do: execute needs a GPU")
    raise device.NoGPUError(f"execute needs a visible CUDA GPU: {detail}")


def command_execute(args) -> int:
    """Execute a chapter notebook with papermill into a new run, then seal it (or file it as failed)."""
    parameters = notebook_parameters(args.stem, args.parameter)
    require_gpu(args.mode)
    run_id = evidence.new_run_id(chapter(args.stem).tag)
    staged = run_notebook(args, {"mode": args.mode, "run_id": run_id, **parameters}, run_id)
    path = seal_with_notebook(run_id, staged, args.root)
    staged.unlink()
    if args.archive:
        print(f"archived {evidence.archive_run(path, Path(args.archive))}")
    print(json.dumps(read_json(path / "headline.json"), indent=1, sort_keys=True))
    print(f"sealed run {run_id} at {path}")
    if args.accept:
        evidence.accept(args.stem, run_id, args.root)
        print(f"accepted {run_id} for {args.stem}")
    return 0


class ExecutionFailed(evidence.EvidenceError):
    """papermill stopped; the message names where the run and its traceback went."""


def run_notebook(args, parameters: dict, run_id: str) -> Path:
    """papermill into evidence/staging/<RUN_ID>.ipynb; on failure the run goes to failed/ with the traceback in its
    REASON.txt, and one line says where."""
    import papermill

    from launchlab.present.sphinx_ext import encrypt_kernel_transport

    # The kernel papermill starts gets CurveZMQ keys, as the book build's kernels do (sphinx_ext says why):
    # ipykernel 7 then has no plain-TCP transport to warn about.
    encrypt_kernel_transport()
    staging = args.root / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    staged = staging / f"{run_id}.ipynb"
    os.environ["LAUNCHLAB_EVIDENCE_ROOT"] = str(args.root)
    try:
        papermill.execute_notebook(str(BOOK_DIR / f"{args.stem}.ipynb"), str(staged), parameters=parameters,
                                   cwd=str(BOOK_DIR), kernel_name=args.kernel, progress_bar=False)
    except Exception as error:  # papermill's own errors, the kernel's, and whatever the notebook raised
        raise ExecutionFailed(f"executing {args.stem} failed ({cell_error(error)}); "
                              f"{file_failed_run(args, run_id, staged, error)}") from None
    return staged


def cell_error(error: Exception) -> str:
    """The notebook's own exception, where papermill names it (its message is the whole cell traceback)."""
    return one_line(f"{error.ename}: {error.evalue}") if hasattr(error, "ename") else message(error)


def file_failed_run(args, run_id: str, staged: Path, error: Exception) -> str:
    """Move the open run (if the notebook got as far as making one) to failed/, the traceback in its REASON.txt;
    say where. A staged notebook that cannot be read stays out of the run rather than stop the move."""
    run_path = args.root / "runs" / run_id
    if not run_path.exists() or (run_path / evidence.MANIFEST).exists():
        return f"no run was written; the executed notebook is {staged}"
    reason = "".join(traceback.format_exception(error))
    try:
        store_notebook(run_path, without_images(read_json(staged)))
    except evidence.EvidenceError as problem:
        reason = f"the executed notebook was not stored: {problem}\n\n{reason}"
    failed = evidence.move_to_failed(run_id, f"execution failed\n\n{reason}", args.root)
    if args.archive:
        print(f"archived {evidence.archive_run(failed, Path(args.archive))}", file=sys.stderr)
    return f"the run and its REASON.txt (with the traceback) are in {failed}"


def command_claims(args) -> int:
    from launchlab.claims.book import refresh_registry

    registry = args.root / "claims" / "claims.yaml"
    if not registry.is_file():
        raise evidence.EvidenceError(f"--root {args.root} holds no claims registry ({registry} is missing)")
    written = refresh_registry(root=args.root)
    print(f"rewrote {written} and the claim-audit downloads from the accepted runs")
    return 0


def command_replicate(args) -> int:
    from launchlab.store.replicates import record_replicate

    listed = record_replicate(args.accepted, args.replicate, args.root)
    print(f"recorded {args.replicate} as a replicate of {args.accepted} "
          f"({len(listed[args.accepted])} replicate(s) now), stored compactly")
    return 0


def command_other_gpu(args) -> int:
    from launchlab.store.replicates import record_other_gpu

    listed = record_other_gpu(args.accepted, args.run, args.root)
    print(f"recorded {args.run} as a run of {args.accepted}'s chapter on another GPU "
          f"({len(listed[args.accepted])} such run(s) now), stored compactly")
    return 0


def command_compact(args) -> int:
    """Leave to each accepted run the files its listed runs hold byte for byte (replicates.compact_listed)."""
    from launchlab.store.replicates import compact_listed

    freed = compact_listed(args.root)
    for run_id, count in freed.items():
        if count:
            print(f"{run_id}: {count} bytes left to its accepted run")
    print(f"{len(freed)} listed run(s) compacted, {sum(freed.values())} bytes freed")
    return 0


def command_plan(args) -> int:
    """A chapter's expanded variants and an estimate of the GPU seconds they take (-p as for execute)."""
    from launchlab.plan import print_plan

    declared = chapter(args.stem)
    typed = declared.parse_parameters(dict(args.parameter or []))
    print_plan(declared, typed, root=args.root)
    return 0


def command_status(args) -> int:
    """The accepted runs: chapter, date, commit, device, clocks, and whether their kernels are current."""
    from launchlab.store.status import accepted_status

    rows = accepted_status(args.root)
    for row in rows:
        print(f"{row['chapter']:<22} {row['run_id']:<26} {row['date']}  commit {row['commit'] or '?':<16} "
              f"{row['device']:<28} clocks {'DROPPED' if row['clocks_dropped'] else 'steady'}  "
              f"kernels {'current' if row['kernels_current'] else 'CHANGED since the run'}")
    missing = [stem for stem in available_stems() if stem not in {row["chapter"] for row in rows}]
    for stem in missing:
        print(f"{stem:<22} no accepted run")
    return 0


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def message(error: BaseException) -> str:
    """An error as one line: a KeyError's own text (not its repr), every line break folded."""
    text = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    return one_line(text) or type(error).__name__


# What a user can cause and mend: each ends as one line on stderr, never a traceback.
EXPECTED = (evidence.EvidenceError, ValueError, KeyError, OSError, device.NoGPUError)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launchlab", description=__doc__)
    parser.add_argument("--root", default=str(evidence.EVIDENCE_ROOT), help="evidence root (default: evidence/)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("verify", help="check every run's manifest and hashes").set_defaults(handler=command_verify)
    sub = commands.add_parser("analyze", help="recompute a run's summaries from raw samples and compare")
    sub.add_argument("run_dir", help="a run directory or a run id")
    sub.set_defaults(handler=command_analyze)
    sub = commands.add_parser("execute", help="execute a chapter on the GPU into a new sealed run")
    sub.add_argument("stem", choices=STEMS, help="notebook stem")
    sub.add_argument("--mode", default="gpu", choices=("gpu", "auto"))
    sub.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"))
    sub.add_argument("--kernel", default="python3", help="Jupyter kernel name")
    sub.add_argument("--accept", action="store_true", help="accept the run if its validation passed")
    sub.add_argument("--archive", metavar="DIR", help="also write DIR/<RUN_ID>.tar.gz of the sealed run "
                     "(to carry it off a GPU host; unpack it in the repository root)")
    sub.set_defaults(handler=command_execute)
    sub = commands.add_parser("seal", help="seal a run written by a plain papermill execution")
    sub.add_argument("run_id")
    sub.add_argument("--notebook", help="the executed notebook to store in the run")
    sub.set_defaults(handler=command_seal)
    sub = commands.add_parser("accept", help="name a passed, sealed run as a chapter's evidence")
    sub.add_argument("stem", choices=STEMS)
    sub.add_argument("run_id")
    sub.add_argument("--force", action="store_true", help="accept a run from uncommitted code or with dropped clocks")
    sub.add_argument("--reason", help="why (required with --force; recorded in accepted_notes.json)")
    sub.set_defaults(handler=command_accept)
    commands.add_parser("claims", help="regenerate the book's claims and C-claim measurements from accepted runs"
                        ).set_defaults(handler=command_claims)
    commands.add_parser("status", help="list the accepted runs and whether their kernels are current"
                        ).set_defaults(handler=command_status)
    sub = commands.add_parser("replicate", help="record a run as a replicate of an accepted run, stored compactly")
    sub.add_argument("accepted", help="the accepted run id")
    sub.add_argument("replicate", help="the replicate's run id (same chapter, sealed, passed)")
    sub.set_defaults(handler=command_replicate)
    sub = commands.add_parser("other-gpu", help="record a run of an accepted run's chapter on another GPU model, "
                              "stored compactly")
    sub.add_argument("accepted", help="the accepted run id")
    sub.add_argument("run", help="the other GPU's run id (same chapter, sealed, passed)")
    sub.set_defaults(handler=command_other_gpu)
    commands.add_parser("compact", help="store every listed replicate and other-GPU run compactly again"
                        ).set_defaults(handler=command_compact)
    sub = commands.add_parser("plan", help="list a chapter's expanded variants and estimate its GPU seconds")
    sub.add_argument("stem", choices=STEMS, help="notebook stem")
    sub.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"))
    sub.set_defaults(handler=command_plan)
    from launchlab import compare

    compare.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        args.root = evidence.check_root(Path(args.root))
        return args.handler(args)
    except EXPECTED as error:
        print(f"error: {message(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
