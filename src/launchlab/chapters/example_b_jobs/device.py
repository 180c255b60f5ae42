"""Example B's targets on the GPU (kernels/jobs.cu): separate kernels, fused CTAs, a persistent queue.

Every row of one case runs on one `JobProblem` (inputs, the volatile stage-A array, outputs, the iteration
table), so all variants of a case read and write the same addresses (`Context.problem`). Each launch reserves
`Layout.dynamic_shared_bytes` of dynamic shared memory, which leaves room for one CTA per SM; the occupancy API
confirms it (`active_ctas_per_sm`). Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.example_b_jobs import model
from launchlab.gpu import build
from launchlab.gpu import probes
from launchlab.gpu.targets import Target

FAMILY = "jobs"
BLOCK = model.VALUES_PER_JOB  # one thread per value
POISON = np.uint32(0xFFFFFFFF)


def load(traced: bool = False) -> build.BuiltModule:
    """Compile kernels/jobs.cu (the traced build with -DLAUNCHLAB_TRACE)."""
    return build.load_module(FAMILY, {"LAUNCHLAB_TRACE": None} if traced else None)


def layout(sm_count: int, shared_per_sm: int, shared_per_block_optin: int) -> dict:
    """Jobs, queue workers (one per SM) and the per-CTA shared-memory reservation of a device (a run records it)."""
    reserved = model.reserved_shared_bytes(shared_per_sm)
    if reserved > shared_per_block_optin:
        raise ValueError(f"half the SM's shared memory plus {model.SHARED_MARGIN_BYTES} bytes ({reserved}) exceeds "
                         f"the per-block limit of {shared_per_block_optin} bytes")
    return {"sm_count": sm_count, "jobs": model.job_count(sm_count), "workers": sm_count,
            "shared_memory": {"shared_per_sm": shared_per_sm, "shared_per_block_optin": shared_per_block_optin,
                              "dynamic_shared_bytes": reserved}}


def device_layout() -> dict:
    """The layout of the current GPU."""
    from launchlab.gpu import device

    return layout(device.sm_count(), device.identity()["shared_bytes_per_sm"], device.shared_limit())


def allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Raise a kernel's dynamic shared-memory limit (needed above 48 KiB)."""
    attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
    cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, attribute, int(nbytes))


def active_ctas_per_sm(kernel, shared_bytes: int, block: int = BLOCK) -> int:
    """CTAs of `kernel` one SM holds at once with this launch's dynamic shared memory (occupancy API)."""
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, int(shared_bytes)))


class Context:
    """What the rows' `make` reads: the built module, the layout (reservation, workers) and one problem per
    case, shared by every row; `work_divisor` shrinks the iteration tables (the sanitizer's child)."""

    def __init__(self, built: build.BuiltModule, layout: dict, work_divisor: int = 1):
        self.built, self.layout, self.work_divisor = built, layout, work_divisor
        self.shared_bytes = layout["shared_memory"]["dynamic_shared_bytes"]
        self.workers = layout["workers"]
        self._problems: dict[str, JobProblem] = {}

    def problem(self, case: str) -> "JobProblem":
        if case not in self._problems:
            self._problems[case] = JobProblem(model.a_iterations(case, self.layout["jobs"]) // self.work_divisor,
                                              model.B_ITERATIONS // self.work_divisor)
        return self._problems[case]


HEAD_EXHAUSTED = 0x7FFFFFFF  # a poisoned queue head: every worker finds the queue already empty


class JobProblem:
    """Device buffers of one case: x and y (jobs x 256 uint32), the volatile stage-A array `mid`, and
    stage A's iteration count per job."""

    def __init__(self, a_iters, b_iters: int = model.B_ITERATIONS):
        a_iters = np.ascontiguousarray(a_iters, dtype=np.int32)
        self.jobs = int(a_iters.size)
        self.b_iters = int(b_iters)
        self.a_iters_host = a_iters
        self.a_iters = cupy.asarray(a_iters)
        shape = (self.jobs, model.VALUES_PER_JOB)
        self.x, self.mid, self.y = (cupy.empty(shape, dtype=cupy.uint32) for _ in range(3))

    def args(self) -> tuple:
        """JOB_PARAMS of kernels/jobs.cu, in order."""
        return (self.x, self.mid, self.y, self.a_iters, np.int32(self.b_iters), np.int32(self.jobs))

    def set_input(self, x: np.ndarray) -> None:
        x = np.ascontiguousarray(x)
        if x.shape != self.x.shape or x.dtype != np.uint32:
            raise ValueError(f"expected uint32 values of shape {self.x.shape}, got {x.dtype}{x.shape}")
        self.x.set(x)


class _JobTarget(Target):
    """Shared by the three schedules: launches with the shared-memory reservation, poison, load, output."""

    KERNELS: tuple[str, ...] = ()
    schedule = ""

    def __init__(self, built: build.BuiltModule, problem: JobProblem, shared_bytes: int):
        self.problem = problem
        self.shared_bytes = int(shared_bytes)
        self.kernels = {name: built.kernel(name) for name in self.KERNELS}
        if self.shared_bytes > 48 * 1024:
            for kernel in self.kernels.values():
                allow_dynamic_shared(kernel, self.shared_bytes)
        self.block = (BLOCK,)
        self.launches: tuple = ()  # (kernel, grid, block, args); each runs with `shared_bytes` of dynamic shared

    def active_ctas_per_sm(self) -> dict:
        return {name: active_ctas_per_sm(kernel, self.shared_bytes) for name, kernel in self.kernels.items()}

    def invoke(self) -> None:
        """Enqueue one invocation on the current stream; no wait."""
        for kernel, grid, block, args in self.launches:
            kernel(grid, block, args, shared_mem=self.shared_bytes)

    def poison(self) -> None:
        """0xFFFFFFFF in the stage-A array and the outputs (and the queue head), so unwritten values fail."""
        self.problem.mid.fill(POISON)
        self.problem.y.fill(POISON)

    def load(self, x: np.ndarray) -> None:
        self.problem.set_input(x)

    def output(self) -> np.ndarray:
        return self.problem.y.get()


class SeparateJobs(_JobTarget):
    """jobs_stage_a then jobs_stage_b, one CTA per job each: the kernel boundary orders B after A."""

    name = "separate"
    KERNELS = model.KERNELS["separate"]
    schedule = "separate"

    def __init__(self, built, problem: JobProblem, shared_bytes: int):
        super().__init__(built, problem, shared_bytes)
        grid, args = (problem.jobs,), problem.args()
        self.launches = tuple((self.kernels[name], grid, self.block, args) for name in self.KERNELS)


class FusedJobs(_JobTarget):
    """jobs_fused: one CTA per job runs A, a block barrier, then B."""

    name = "fused"
    KERNELS = model.KERNELS["fused"]
    schedule = "fused"

    def __init__(self, built, problem: JobProblem, shared_bytes: int):
        super().__init__(built, problem, shared_bytes)
        self.launches = ((self.kernels["jobs_fused"], (problem.jobs,), self.block, problem.args()),)


class QueueJobs(_JobTarget):
    """jobs_queue: `workers` CTAs take jobs from an atomic counter.

    Every invocation first zeroes the counter with a device memset on the stream: part of the
    timed work, and a memset node in a captured graph."""

    name = "queue"
    KERNELS = model.KERNELS["queue"]
    schedule = "queue"

    def __init__(self, built, problem: JobProblem, shared_bytes: int, workers: int):
        super().__init__(built, problem, shared_bytes)
        self.workers = int(workers)
        self.head = cupy.zeros(1, dtype=cupy.uint32)
        self.launches = ((self.kernels["jobs_queue"], (self.workers,), self.block, problem.args() + (self.head,)),)
        self.stream_ptr = cupy.cuda.get_current_stream().ptr

    @property
    def submissions(self) -> int:
        return 2  # the counter memset and the launch

    def invoke(self) -> None:
        cupy.cuda.runtime.memsetAsync(self.head.data.ptr, 0, self.head.nbytes, self.stream_ptr)
        super().invoke()

    def poison(self) -> None:
        """Also the counter: only the invocation's own memset may make the queue start at job 0."""
        super().poison()
        self.head.fill(HEAD_EXHAUSTED)  # far past the last job, and far from wrapping to 0 under atomicAdd

    def head_after(self) -> int:
        """The counter after a complete invocation: jobs + workers (every worker's last fetch overshoots)."""
        cupy.cuda.get_current_stream().synchronize()
        return int(self.head.get()[0])


# --------------------------------------------------------------------------- traces
def attach_trace(traced: build.BuiltModule, jobs: int):
    """Zeroed records, model.JOB_WORDS per job, wired to the traced module's trace_records.

    Must precede any launch of a traced kernel: its probe writes through this pointer."""
    records = cupy.zeros(jobs * model.JOB_WORDS, dtype=cupy.uint64)
    cupy.ndarray((1,), cupy.uint64, memptr=traced.module.get_global("trace_records")).fill(records.data.ptr)
    cupy.cuda.get_current_stream().synchronize()
    return records


def collect_trace(records, invoke) -> dict:
    """One traced invocation (stream launches or graph replay) -> model.trace_arrays."""
    return model.trace_arrays(probes.collect_raw(records, invoke))


def underlying(variant):
    """The schedule's Target behind a variant (a GraphReplay's captured target, else the variant)."""
    return getattr(variant, "target", variant)
