"""compute-sanitizer's wrapper (gpu/sanitizer.py) on the CPU: summary lines, a missing sanitizer, what a run keeps;
and the thin CLI over it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab.gpu import sanitizer

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_error_counts_from_summary_lines():
    assert sanitizer.error_count("memcheck", "========= ERROR SUMMARY: 0 errors") == 0
    assert sanitizer.error_count("memcheck", "========= ERROR SUMMARY: 3 errors") == 3
    racecheck = "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n========= ERROR SUMMARY: 1 error"
    assert sanitizer.error_count("racecheck", racecheck) == 1
    assert sanitizer.error_count("memcheck", "Traceback (most recent call last)") is None


def test_inner_result_reads_the_last_tagged_line():
    text = f"noise\n{sanitizer.RESULT_TAG}{json.dumps({'passed': False})}\n{sanitizer.RESULT_TAG}{json.dumps({'passed': True})}\n"
    assert sanitizer.inner_result(text) == {"passed": True}
    assert sanitizer.inner_result("no result") is None


def test_clean_needs_a_finished_tool_no_errors_and_passing_checks():
    ran = {"error": None, "exit_code": 0, "errors": 0, "inner": {"passed": True, "checks": {"a": True}}}
    assert sanitizer.is_clean(ran)
    assert not sanitizer.is_clean({**ran, "errors": 1})
    assert not sanitizer.is_clean({**ran, "errors": None})
    assert not sanitizer.is_clean({**ran, "inner": None})
    assert not sanitizer.is_clean({**ran, "inner": {"passed": False}})
    assert not sanitizer.is_clean({**ran, "error": "memcheck did not finish in 300 s", "exit_code": None})


def test_without_the_sanitizer_every_tool_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: None)
    result = sanitizer.sanitize("launchlab.chapters.example_b_jobs.sanitize")
    assert result["clean"] is False and "not found" in result["error"]
    assert [t["tool"] for t in result["tools"]] == list(sanitizer.TOOLS)
    (tmp_path / "sanitizer").mkdir()
    for tool in result["tools"]:
        (tmp_path / "sanitizer" / f"{tool['tool']}.json").write_text(json.dumps(tool))
    table = sanitizer.read_results(tmp_path)
    assert set(table) == set(sanitizer.TOOLS)
    assert all(not t["ran"] and not t["clean"] and "not found" in t["error"] for t in table.values())
    with pytest.raises(ValueError, match="no child module"):
        sanitizer.sanitize("launchlab.chapters.no_such_chapter.sanitize")


def test_cli_without_the_sanitizer_reports_it(tmp_path):
    """The tool script is a thin CLI over the library: no sanitizer on PATH -> a JSON summary and exit 1."""
    if sanitizer.find_sanitizer():
        pytest.skip("compute-sanitizer is installed here")
    out = tmp_path / "summary.json"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tools/sanitize_examples.py"), "--example", "pointwise",
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    summary = json.loads(out.read_text())
    assert list(summary) == ["pointwise"] and summary["pointwise"]["clean"] is False
