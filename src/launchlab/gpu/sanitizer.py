"""compute-sanitizer memcheck and racecheck over every variant of Example A or Example B (and, for chapter 4,
memcheck, racecheck and synccheck over every megakernel design: `megakernels`), in a child process.

    sanitize("pointwise")  ->  {"sanitizer", "error", "tools": [one result per tool], "clean"}

The parent runs `compute-sanitizer --tool <tool> python -m launchlab.gpu.sanitizer inner <example>`;
the child (`inner`) launches each variant once on small problems, from the stream and as a graph
replay (Example B also in its traced build), checks every output exactly against the oracle, prints
one tagged JSON line and exits non-zero on a mismatch. CuPy's memory pool is off in the child, so
every array is its own allocation and an access past its end is one memcheck can see.

A tool result holds the command, exit status, the error count read from the sanitizer's summary line,
the child's own checks and the last lines of the output; where the sanitizer is missing or does not
finish, the reason instead. Nothing here runs inside a timed region. The parent side needs no GPU
library; the child imports CuPy.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOOLS = ("memcheck", "racecheck")
EXAMPLES = ("pointwise", "jobs", "megakernels", "fusion")
TAIL_LINES = 20
RESULT_TAG = "SANITIZE-INNER "
POINTWISE_SIZES = (1000, 32_768)  # a partial last block, and a few full ones
JOB_WORK_DIVISOR = 64             # Example B with the real job table, its iteration counts / 64
INNER_SEED = 1
PROBLEMS = {  # what the child runs, in words for the pages
    "pointwise": f"every variant at {' and '.join(f'{n:,}' for n in POINTWISE_SIZES)} elements",
    "jobs": (f"every variant in both cases, the device's job table with stage iterations divided by "
             f"{JOB_WORK_DIVISOR}, timed and traced builds (traces checked too)"),
    "megakernels": ("every chapter 4 design (the run's `designs`) from the stream and as a graph replay, one "
                    "invocation each on a small balanced and a small ragged case (launchlab.chapters.megakernels."
                    "sanitize)"),
    "fusion": ("every fused design (narrow rows, the row kernel's three tiers, a cluster with slices in registers "
               "and in shared memory, split rows kept and streamed) in both modes, from the stream and as a graph "
               "replay, on small irregular shapes (launchlab.chapters.fusion.sanitize)"),
}


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


def run_tool(executable: str, tool: str, example: str, timeout_s: int = 300) -> dict:
    """One sanitizer tool over the child run of one example."""
    command = [executable, "--tool", tool, sys.executable, "-m", "launchlab.gpu.sanitizer", "inner", example]
    shown = [Path(executable).name, "--tool", tool, "python", "-m", "launchlab.gpu.sanitizer", "inner", example]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=child_environment())
    except subprocess.TimeoutExpired:
        return {"tool": tool, "example": example, "command": shown, "exit_code": None, "errors": None,
                "inner": None, "tail": [], "error": f"{tool} did not finish in {timeout_s} s"}
    output = done.stdout + done.stderr
    return {"tool": tool, "example": example, "command": shown, "exit_code": done.returncode,
            "errors": error_count(tool, output), "inner": inner_result(done.stdout),
            "tail": output.splitlines()[-TAIL_LINES:], "error": None}


def is_clean(result: dict) -> bool:
    """A tool ran to the end, found no error, and every check of the child passed."""
    return (result.get("error") is None and result.get("exit_code") == 0 and result.get("errors") == 0
            and bool(result.get("inner")) and bool(result["inner"]["passed"]))


def sanitize(example: str, tools=TOOLS, timeout_s: int = 300) -> dict:
    """Every tool over one example; without the sanitizer, one result per tool that says so."""
    if example not in EXAMPLES:
        raise ValueError(f"unknown example {example!r}; expected one of {EXAMPLES}")
    executable = find_sanitizer()
    if executable is None:
        reason = "compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda, beside nvcc)"
        results = [{"tool": tool, "example": example, "command": None, "exit_code": None, "errors": None,
                    "inner": None, "tail": [], "error": reason} for tool in tools]
        return {"sanitizer": None, "error": reason, "tools": results, "clean": False}
    results = [run_tool(executable, tool, example, timeout_s) for tool in tools]
    return {"sanitizer": executable, "error": None, "tools": results, "clean": all(is_clean(r) for r in results)}


def record(session, example: str, tools=TOOLS, timeout_s: int = 300) -> dict:
    """Every tool over one example, kept in the run (runner.Session): sanitizer/<tool>.json and a note."""
    result = sanitize(example, tools=tools, timeout_s=timeout_s)
    for tool in result["tools"]:
        session.writer.write_json(f"sanitizer/{tool['tool']}.json", tool)
    session.note("sanitizer", {"executable": result["sanitizer"], "clean": result["clean"], "error": result["error"],
                               "tools": list(tools), "problem": PROBLEMS[example]})
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


# --------------------------------------------------------------------------- the child run
def inner(example: str) -> dict:
    import cupy

    from launchlab.gpu.backend import CupyBackend

    cupy.cuda.set_allocator(None)  # no pool: each array its own allocation, so memcheck sees its end
    backend = CupyBackend()
    if example == "megakernels":
        from launchlab.chapters.megakernels.sanitize import inner_checks

        checks = inner_checks(backend)
    elif example == "fusion":
        from launchlab.chapters.fusion.sanitize import inner_checks

        checks = inner_checks(backend)
    else:
        checks = _pointwise(backend) if example == "pointwise" else _jobs(backend)
    return {"example": example, "problem": PROBLEMS[example], "checks": checks, "passed": all(checks.values())}


def _pointwise(backend) -> dict:
    from launchlab.gpu import pointwise
    from launchlab.model import pointwise as model

    built, checks = pointwise.load(), {}
    for n in POINTWISE_SIZES:
        x = model.fixture(INNER_SEED, 0, n)
        reference = model.reference(x)
        for name, variant in pointwise.variants(built, n, backend.stream).items():
            checks[f"{name}.{n}"] = model.compare_exact(variant.compute(x), reference)["passed"]
    return checks


def _jobs(backend) -> dict:
    from launchlab.gpu import jobs
    from launchlab.model import jobs as model

    checks = {}
    count = model.job_count(jobs.sm_count())
    for build_name in ("timed", "traced"):
        built = jobs.load(traced=build_name == "traced")
        records = jobs.attach_trace(built, count) if build_name == "traced" else None  # before any traced launch
        for case in model.CASES:
            problem = jobs.JobProblem(model.a_iterations(case, count) // JOB_WORK_DIVISOR,
                                      model.B_ITERATIONS // JOB_WORK_DIVISOR)
            x = model.inputs(INNER_SEED, 0, problem.jobs)
            reference = problem.reference(x)
            for name, variant in jobs.variants(built, problem, backend.stream).items():
                label = f"{build_name}.{name}.{case}"
                checks[label] = model.compare_exact(variant.compute(x), reference)["passed"]
                if records is not None:
                    target = jobs.underlying(variant)
                    trace = jobs.collect_trace(records, variant.invoke)
                    result = model.check_trace(trace, problem.jobs, target.schedule, getattr(target, "workers", None))
                    checks[f"{label}.trace"] = result["passed"]
    return checks


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "inner" and argv[1] in EXAMPLES:
        result = inner(argv[1])
        print(RESULT_TAG + json.dumps(result, sort_keys=True), flush=True)
        return 0 if result["passed"] else 1
    print(f"usage: python -m launchlab.gpu.sanitizer inner {{{','.join(EXAMPLES)}}}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
