"""Which GPU is here, in what state, and which mode a chapter runs in.

Nothing here needs a GPU to import; CuPy is imported only when asked for.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess

MODES = ("auto", "gpu", "evidence")
SMI_FIELDS = ("clocks.sm", "clocks.mem", "clocks.max.sm", "temperature.gpu", "power.draw",
              "clocks_event_reasons.active", "pstate")


class NoGPUError(RuntimeError):
    """GPU mode was asked for where no CUDA device is visible."""


def gpu_status() -> tuple[bool, str]:
    """(True, device name) when CuPy sees a CUDA device, else (False, why not)."""
    try:
        import cupy
    except Exception as error:  # ImportError, or a broken CUDA installation
        return False, f"CuPy cannot be imported ({type(error).__name__}: {error})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        return False, f"CuPy sees no CUDA device ({type(error).__name__}: {error})"
    if count == 0:
        return False, "CuPy reports zero CUDA devices"
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return True, name.decode() if isinstance(name, bytes) else str(name)


def resolve_mode(mode: str) -> str:
    """'auto' -> 'gpu' where a device is visible, else 'evidence'; 'gpu' needs a device."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    if mode == "evidence":
        return mode
    available, detail = gpu_status()
    if mode == "gpu" and not available:
        raise NoGPUError(f"mode 'gpu' needs a visible CUDA GPU: {detail}")
    return "gpu" if available else "evidence"


def identity() -> dict:
    """Name, compute capability, SM count, L2 and shared-memory sizes of GPU 0."""
    import cupy

    properties = cupy.cuda.runtime.getDeviceProperties(0)
    name = properties["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{properties['major']}.{properties['minor']}",
        "sm_count": int(properties["multiProcessorCount"]),
        "l2_bytes": int(properties["l2CacheSize"]),
        "shared_bytes_per_block_optin": int(properties["sharedMemPerBlockOptin"]),
        "shared_bytes_per_sm": int(properties["sharedMemPerMultiprocessor"]),
        "global_memory_bytes": int(properties["totalGlobalMem"]),
        "smi": smi_identity(),
    }


def _property(name: str) -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())[name])


def sm_count() -> int:
    """SMs of the current GPU."""
    return _property("multiProcessorCount")


def shared_limit() -> int:
    """Dynamic shared memory one block may opt in to on the current GPU, in bytes."""
    return _property("sharedMemPerBlockOptin")


def compute_capability() -> tuple[int, int]:
    return _property("major"), _property("minor")


def environment() -> dict:
    """The software and host a run measured with: driver, CUDA runtime, CuPy, Python, NumPy, CPU.

    Libraries a chapter loads (cuDNN, PyTorch, Triton) add their versions under `libraries`."""
    import cupy
    import numpy

    smi = smi_identity() or {}
    return {
        "driver": smi.get("driver_version"),
        "driver_api_version": cupy.cuda.runtime.driverGetVersion(),
        "cuda_runtime_version": cupy.cuda.runtime.runtimeGetVersion(),
        "cupy": cupy.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "host": platform.node(),
        "libraries": {},
    }


def cpu_model() -> str:
    """The host CPU's model name (/proc/cpuinfo), else what the platform module says."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def smi_identity() -> dict | None:
    if not shutil.which("nvidia-smi"):
        return None
    fields = ("name", "driver_version", "pci.bus_id", "memory.total", "clocks.max.sm", "clocks.max.mem", "power.limit")
    return _smi_query(fields)


def state() -> dict:
    """Clocks, temperature and power now (nvidia-smi), with a UTC timestamp."""
    reading = _smi_query(SMI_FIELDS) if shutil.which("nvidia-smi") else None
    return {"utc": _dt.datetime.now(_dt.timezone.utc).isoformat(), "smi": reading}


def _smi_query(fields) -> dict | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": str(error)}
    if out.returncode != 0:
        return {"error": out.stderr.strip() or out.stdout.strip()}
    values = [v.strip() for v in out.stdout.strip().split(",")]
    return dict(zip(fields, values))


CLOCK_DROP_TOLERANCE = 0.9   # an SM clock after timing below this share of the one before flags the run


def clocks_dropped(before: dict, after: dict, tolerance: float = CLOCK_DROP_TOLERANCE) -> bool | None:
    """True when the SM clock read after timing is below `tolerance` x the one before.

    Both readings are taken with the GPU busy (just after warm-ups, just after the
    last round); None when either is missing."""
    try:
        sm_before = float(before["smi"]["clocks.sm"])
        sm_after = float(after["smi"]["clocks.sm"])
    except (KeyError, TypeError, ValueError):
        return None
    return sm_after < tolerance * sm_before
