"""Names every module resolves: a name used but never bound (a missing import, say) fails only when that line
runs, and some lines run only on a GPU (chapter 1's traced build once failed on one there). pyflakes reads every
module of src/launchlab, tools and tests without running it; an unused local is reported too, as dead code."""
import ast
from pathlib import Path

from pyflakes import checker, messages

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src/launchlab", "tools", "tests")
FLAGGED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport, messages.UnusedVariable)


def problems_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = checker.Checker(tree, filename=str(path)).messages
    return [f"{path.relative_to(ROOT)}:{m.lineno}: {m.message % m.message_args}" for m in found
            if isinstance(m, FLAGGED)]


def test_every_name_a_module_uses_is_bound_and_every_local_is_used():
    files = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) > 100
    problems = [problem for path in files for problem in problems_in(path)]
    assert problems == []


def test_the_check_finds_a_missing_import(tmp_path):
    module = tmp_path / "broken.py"
    module.write_text("def trace(rows):\n    unused = 1\n    return len(ROW_KERNELS) * rows\n")
    found = checker.Checker(ast.parse(module.read_text()), filename=str(module)).messages
    assert {type(m) for m in found if isinstance(m, FLAGGED)} == {messages.UndefinedName, messages.UnusedVariable}
