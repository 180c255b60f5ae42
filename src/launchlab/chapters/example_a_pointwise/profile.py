"""Nsight Compute's DRAM bytes of Example A's rows at one size, read in a separate process.

    profile_dram(n)  ->  {"command", "returncode", "csv", "error"}

The parent runs ncu (gpu/ncu.py's options and metrics) over `python -m launchlab.chapters.example_a_pointwise.profile
N`, the child, which invokes every row that enters the `dram` output once on one bounded dyadic input of N
elements. Never inside a timed region. ncu's cache control flushes the caches before each profiled kernel, so
every kernel's bytes are those of a start with a cold L2.
"""
from __future__ import annotations

import sys

MODULE = "launchlab.chapters.example_a_pointwise.profile"
KERNEL_FILTER = "regex:^pw_"   # ncu profiles these kernels only (not CuPy's fills and copies)
SEED = 1


def profile_dram(n: int, timeout_s: int = 300) -> dict:
    """ncu's CSV text for the profiled rows at n, or why there is none (gpu/ncu.py's `profile`)."""
    from launchlab.gpu import ncu

    return ncu.profile([MODULE, str(int(n))], kernel_filter=KERNEL_FILTER, timeout_s=timeout_s)


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
