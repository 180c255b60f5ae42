"""compute-sanitizer's tools over a chapter's child process: the chapter names a module to run, the child
launches what it checks once on small problems and prints one tagged JSON line, and this module reads it.

    sanitize("launchlab.chapters.fusion.sanitize", tools)  ->  {"sanitizer", "error", "tools": [...], "clean"}

The parent runs `compute-sanitizer --tool <tool> python -m <child module>`; the child calls `child_main(problem,
checks)`, which turns CuPy's memory pool off (every array its own allocation, so memcheck sees an access past its
end), runs the checks, prints RESULT_TAG + JSON and exits non-zero on a mismatch.

A tool result holds the command, exit status, the error count read from the sanitizer's summary line, the child's
own checks and the last lines of the output; where the sanitizer is missing or does not finish, the reason
instead. Nothing here runs inside a timed region. The parent side needs no GPU library; the child imports CuPy.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOOLS = ("memcheck", "racecheck")
TAIL_LINES = 20
RESULT_TAG = "SANITIZE-INNER "


def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, else under CUDA_HOME, /usr/local/cuda or beside nvcc."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    if shutil.which("nvcc"):
        roots.append(str(Path(shutil.which("nvcc")).resolve().parents[1]))
    for root in filter(None, roots):
        for candidate in (Path(root) / "bin/compute-sanitizer", Path(root) / "compute-sanitizer/compute-sanitizer"):
            if candidate.exists():
                return str(candidate)
    return None


def child_environment() -> dict:
    """This process's environment with src/ on PYTHONPATH, so a child process finds launchlab as we do."""
    environment = dict(os.environ)
    source = str(Path(__file__).resolve().parents[2])
    environment["PYTHONPATH"] = source + os.pathsep + environment.get("PYTHONPATH", "")
    return environment


def error_count(tool: str, output: str) -> int | None:
    """Errors from the sanitizer's summary line (racecheck: its errors, not its warnings); None if absent."""
    if tool == "racecheck":
        if m := re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", output):
            return int(m.group(1))
    if m := re.search(r"ERROR SUMMARY: (\d+) errors?", output):
        return int(m.group(1))
    return None


def inner_result(stdout: str) -> dict | None:
    """The child's tagged JSON line (its last one), or None if it printed none."""
    lines = [line[len(RESULT_TAG):] for line in stdout.splitlines() if line.startswith(RESULT_TAG)]
    return json.loads(lines[-1]) if lines else None


def run_tool(executable: str, tool: str, child: str, timeout_s: int = 300, environment: dict | None = None) -> dict:
    """One sanitizer tool over one run of the child module."""
    command = [executable, "--tool", tool, sys.executable, "-m", child]
    shown = [Path(executable).name, "--tool", tool, "python", "-m", child]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              env={**child_environment(), **(environment or {})})
    except subprocess.TimeoutExpired:
        return {"tool": tool, "child": child, "command": shown, "exit_code": None, "errors": None,
                "inner": None, "tail": [], "error": f"{tool} did not finish in {timeout_s} s"}
    output = done.stdout + done.stderr
    return {"tool": tool, "child": child, "command": shown, "exit_code": done.returncode,
            "errors": error_count(tool, output), "inner": inner_result(done.stdout),
            "tail": output.splitlines()[-TAIL_LINES:], "error": None}


def is_clean(result: dict) -> bool:
    """A tool ran to the end, found no error, and every check of the child passed."""
    return (result.get("error") is None and result.get("exit_code") == 0 and result.get("errors") == 0
            and bool(result.get("inner")) and bool(result["inner"]["passed"]))


def sanitize(child: str, tools=TOOLS, timeout_s: int = 300, environment: dict | None = None) -> dict:
    """Every tool over the child module; without the sanitizer, one result per tool that says so."""
    try:
        found = importlib.util.find_spec(child)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise ValueError(f"no child module {child!r} to run under compute-sanitizer")
    executable = find_sanitizer()
    if executable is None:
        reason = "compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda, beside nvcc)"
        results = [{"tool": tool, "child": child, "command": None, "exit_code": None, "errors": None,
                    "inner": None, "tail": [], "error": reason} for tool in tools]
        return {"sanitizer": None, "error": reason, "tools": results, "clean": False}
    results = [run_tool(executable, tool, child, timeout_s, environment) for tool in tools]
    return {"sanitizer": executable, "error": None, "tools": results, "clean": all(is_clean(r) for r in results)}


def record(session, child: str, problem: str, tools=TOOLS, timeout_s: int = 300,
           environment: dict | None = None) -> dict:
    """Every tool over the child module, kept in the run (runner.Session): sanitizer/<tool>.json and a note that
    says, in words for the page, what the child runs (`problem`)."""
    result = sanitize(child, tools=tools, timeout_s=timeout_s, environment=environment)
    for tool in result["tools"]:
        session.writer.write_json(f"sanitizer/{tool['tool']}.json", tool)
    session.note("sanitizer", {"executable": result["sanitizer"], "clean": result["clean"], "error": result["error"],
                               "tools": list(tools), "problem": problem})
    return result


def read_results(run_dir: Path) -> dict:
    """{tool: {"ran", "clean", "errors", "exit_code", "child_checks", "child_passed", "problem", "error"}} from a run's
    sanitizer/*.json (NumPy-free: summaries call it)."""
    table = {}
    for path in sorted((Path(run_dir) / "sanitizer").glob("*.json")):
        result = json.loads(path.read_text())
        inner = result.get("inner") or {}
        table[result["tool"]] = {"ran": result.get("exit_code") is not None, "clean": is_clean(result),
                                 "errors": result.get("errors"), "exit_code": result.get("exit_code"),
                                 "child_checks": len(inner.get("checks", {})), "child_passed": inner.get("passed"),
                                 "problem": inner.get("problem"), "error": result.get("error")}
    return table


# --------------------------------------------------------------------------- the child's side
def child_main(problem: str, checks) -> int:
    """What a child module's `__main__` runs: `checks(backend) -> {label: passed}` with CuPy's pool off, then the
    tagged result line; exit 0 only when every check passed."""
    import cupy

    from launchlab.gpu.backend import CupyBackend

    cupy.cuda.set_allocator(None)  # no pool: each array its own allocation, so memcheck sees its end
    results = checks(CupyBackend())
    passed = bool(results) and all(results.values())
    print(RESULT_TAG + json.dumps({"problem": problem, "checks": results, "passed": passed}, sort_keys=True), flush=True)
    return 0 if passed else 1
