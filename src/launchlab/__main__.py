"""Command line: python -m launchlab {verify, analyze, execute, seal, accept, claims}."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import traceback
from pathlib import Path

from launchlab.store import evidence
from launchlab.store.runs import analyze
from launchlab.chapters import chapter_module

BOOK_DIR = evidence.REPO_ROOT / "book"
STAGING_DIR = evidence.EVIDENCE_ROOT / "staging"


def command_verify(args) -> int:
    problems = evidence.verify(Path(args.root))
    for problem in problems:
        print(f"FAIL {problem}")
    runs = evidence.all_run_dirs(Path(args.root))
    print(f"{len(runs)} run(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def command_analyze(args) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "run.json").exists():
        run_dir = evidence.run_dir(args.run_dir, Path(args.root))  # a bare run id
    problems = analyze(run_dir)
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{run_dir.name}: summaries {'differ' if problems else 'reproduced exactly'}")
    return 1 if problems else 0


def seal_with_notebook(run_id: str, notebook: Path | None) -> Path:
    path = evidence.run_dir(run_id)
    if notebook is not None:
        shutil.copyfile(notebook, path / "notebook.ipynb")
    evidence.seal(path)
    return path


def command_seal(args) -> int:
    path = seal_with_notebook(args.run_id, Path(args.notebook) if args.notebook else None)
    print(f"sealed {path}")
    return 0


def command_accept(args) -> int:
    evidence.accept(args.stem, args.run_id)
    print(f"accepted {args.run_id} for {args.stem}")
    return 0


def command_execute(args) -> int:
    """Execute a chapter notebook with papermill into a new run, then seal it (or file it as failed)."""
    import papermill

    module = chapter_module(args.stem)
    run_id = evidence.new_run_id(module.TAG)
    parameters = {"mode": args.mode, "run_id": run_id, **dict(args.parameter or [])}
    STAGING_DIR.mkdir(parents=True, exist_ok=True)
    staged = STAGING_DIR / f"{run_id}.ipynb"
    try:
        papermill.execute_notebook(str(BOOK_DIR / f"{args.stem}.ipynb"), str(staged), parameters=parameters,
                                   cwd=str(BOOK_DIR), kernel_name=args.kernel, progress_bar=False)
    except Exception as error:
        run_path = evidence.EVIDENCE_ROOT / "runs" / run_id
        if run_path.exists() and not (run_path / evidence.MANIFEST).exists():
            if staged.exists():
                shutil.copyfile(staged, run_path / "notebook.ipynb")
            reason = f"execution failed: {error}\n\n{traceback.format_exc(limit=3)}"
            failed = evidence.move_to_failed(run_id, reason)
            print(f"run {run_id} failed and was moved to {failed}", file=sys.stderr)
            if args.archive:
                print(f"archived {evidence.archive_run(failed, Path(args.archive))}", file=sys.stderr)
        raise
    path = seal_with_notebook(run_id, staged)
    staged.unlink()
    if args.archive:
        print(f"archived {evidence.archive_run(path, Path(args.archive))}")
    print(json.dumps(json.loads((path / "headline.json").read_text()), indent=1, sort_keys=True))
    print(f"sealed run {run_id} at {path}")
    if args.accept:
        evidence.accept(args.stem, run_id)
        print(f"accepted {run_id} for {args.stem}")
    return 0


def command_claims(args) -> int:
    from launchlab.claims.book import refresh_registry

    print(f"rewrote {refresh_registry()} and the claim-audit downloads from the accepted runs")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launchlab", description=__doc__)
    parser.add_argument("--root", default=str(evidence.EVIDENCE_ROOT), help="evidence root (default: evidence/)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("verify", help="check every run's manifest and hashes").set_defaults(handler=command_verify)
    sub = commands.add_parser("analyze", help="recompute a run's summaries from raw samples and compare")
    sub.add_argument("run_dir", help="a run directory or a run id")
    sub.set_defaults(handler=command_analyze)
    sub = commands.add_parser("execute", help="execute a chapter on the GPU into a new sealed run")
    sub.add_argument("stem", help="notebook stem, e.g. ordinary_launches")
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
    sub.add_argument("stem")
    sub.add_argument("run_id")
    sub.set_defaults(handler=command_accept)
    commands.add_parser("claims", help="regenerate the book's claims and C-claim measurements from accepted runs"
                        ).set_defaults(handler=command_claims)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (evidence.EvidenceError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
