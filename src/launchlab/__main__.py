"""Command line: python -m launchlab {verify, analyze, execute, seal, accept, claims, status}.

Every command honours --root (the evidence store; default evidence/); a root that does not exist
is an error."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from launchlab.chapters import STEMS, available_stems, chapter
from launchlab.store import evidence

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
    """Store the executed notebook (its images removed: the figures are regenerated from the data) and seal."""
    path = evidence.run_dir(run_id, root)
    if notebook is not None:
        (path / "notebook.ipynb").write_text(without_images(Path(notebook).read_text()))
    evidence.seal(path)
    return path


def without_images(notebook_text: str) -> str:
    notebook = json.loads(notebook_text)
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


def command_execute(args) -> int:
    """Execute a chapter notebook with papermill into a new run, then seal it (or file it as failed)."""
    import papermill

    from launchlab.present.sphinx_ext import encrypt_kernel_transport

    # The kernel papermill starts gets CurveZMQ keys, as the book build's kernels do (sphinx_ext says why):
    # ipykernel 7 then has no plain-TCP transport to warn about.
    encrypt_kernel_transport()
    run_id = evidence.new_run_id(chapter(args.stem).tag)
    parameters = {"mode": args.mode, "run_id": run_id, **dict(args.parameter or [])}
    staging = args.root / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    staged = staging / f"{run_id}.ipynb"
    os.environ["LAUNCHLAB_EVIDENCE_ROOT"] = str(args.root)
    try:
        papermill.execute_notebook(str(BOOK_DIR / f"{args.stem}.ipynb"), str(staged), parameters=parameters,
                                   cwd=str(BOOK_DIR), kernel_name=args.kernel, progress_bar=False)
    except Exception as error:
        run_path = args.root / "runs" / run_id
        if run_path.exists() and not (run_path / evidence.MANIFEST).exists():
            if staged.exists():
                (run_path / "notebook.ipynb").write_text(without_images(staged.read_text()))
            failed = evidence.move_to_failed(run_id, f"execution failed: {error}\n\n{traceback.format_exc(limit=3)}",
                                             args.root)
            print(f"run {run_id} failed and was moved to {failed}", file=sys.stderr)
            if args.archive:
                print(f"archived {evidence.archive_run(failed, Path(args.archive))}", file=sys.stderr)
        raise
    path = seal_with_notebook(run_id, staged, args.root)
    staged.unlink()
    if args.archive:
        print(f"archived {evidence.archive_run(path, Path(args.archive))}")
    print(json.dumps(json.loads((path / "headline.json").read_text()), indent=1, sort_keys=True))
    print(f"sealed run {run_id} at {path}")
    if args.accept:
        evidence.accept(args.stem, run_id, args.root)
        print(f"accepted {run_id} for {args.stem}")
    return 0


def command_claims(args) -> int:
    from launchlab.claims.book import refresh_registry

    print(f"rewrote {refresh_registry()} and the claim-audit downloads from the accepted runs")
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


def _root(text: str) -> Path:
    return evidence.check_root(Path(text))


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
    args = parser.parse_args(argv)
    try:
        args.root = _root(args.root)
        return args.handler(args)
    except (evidence.EvidenceError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
