"""Nsight Compute's DRAM bytes of Example A's rows at one size, read in a separate process.

    profile_dram(n)  ->  {"command", "returncode", "csv", "error"}

The parent runs ncu (gpu/ncu.py's options and metrics) over `python -m launchlab.chapters.example_a_pointwise.profile
N`, the child, which invokes every row that enters the `dram` output once on one bounded dyadic input of N
elements. Never inside a timed region. ncu's cache control flushes the caches before each profiled kernel, so
every kernel's bytes are those of a start with a cold L2.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = "launchlab.chapters.example_a_pointwise.profile"
KERNEL_FILTER = "regex:^pw_"   # ncu profiles these kernels only (not CuPy's fills and copies)
SEED = 1


def command(ncu: str, log_file: str, n: int) -> list[str]:
    from launchlab.gpu.ncu import METRICS

    return [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(METRICS),
            "--kernel-name", KERNEL_FILTER, "--csv", "--print-units", "base", "--log-file", log_file,
            sys.executable, "-m", MODULE, str(int(n))]


def profile_dram(n: int, timeout_s: int = 300) -> dict:
    """ncu's CSV text for the profiled rows at n, or why there is none."""
    from launchlab.gpu.ncu import find_ncu, parse_ncu_csv
    from launchlab.gpu.sanitizer import child_environment

    ncu = find_ncu()
    if ncu is None:
        return {"command": None, "returncode": None, "csv": "", "error": "ncu (Nsight Compute) is not on this host"}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "ncu.csv")
        argv = command(ncu, log_file, n)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=child_environment())
        except subprocess.TimeoutExpired:
            return {"command": argv, "returncode": None, "csv": "", "error": f"ncu did not finish in {timeout_s} s"}
        text = (Path(log_file).read_text() if Path(log_file).exists() else "") or done.stdout
    error = None
    if done.returncode != 0 or not parse_ncu_csv(text):
        tail = "\n".join((done.stderr + "\n" + text).strip().splitlines()[-12:])
        error = f"ncu exited with status {done.returncode} and no counter values: {tail}"
    return {"command": argv, "returncode": done.returncode, "csv": text, "error": error}


def invoke_each_row(n: int) -> None:
    """The child: every profiled row once on one input of n elements, in declared order; prints nothing."""
    import cupy

    from launchlab.chapters.declaration import Counts
    from launchlab.chapters.example_a_pointwise import CHAPTER, Parameters, model
    from launchlab.chapters.example_a_pointwise.device import Context, load
    from launchlab.gpu.backend import CupyBackend

    CupyBackend()
    context = Context(load())
    profiled = [v for v in CHAPTER.variants(Parameters(sizes=Counts((n,)), profile_size=n)) if "dram" in v.enters]
    targets = [v.row.make(context, v.id.case) for v in profiled]
    targets[0].load(model.fixture(SEED, 0, n))  # the rows share x
    cupy.cuda.get_current_stream().synchronize()
    for target in targets:
        target.invoke()
    cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -m {MODULE} N")
    invoke_each_row(int(sys.argv[1]))
