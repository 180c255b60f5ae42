"""Kernel builder: kernels/*.cu through CuPy's RawModule, with a record of how.

The source is expanded (local #include "...") before compiling, so the recorded
SHA-256 covers every line the compiler saw and CuPy's cache cannot serve a stale
header. Where nvcc exists, the same source and options also go through nvcc for
ptxas's resource report, the PTX and (with cuobjdump) the SASS.

Kernels are built for the GPU at hand (`-arch=sm_<major><minor>` from its compute capability);
`arch="sm_80"` and the like build for a named architecture without a GPU (the CPU tests do).
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parents[3] / "kernels"
STANDARD = "-std=c++17"
ARCHES = ("sm_80", "sm_89", "sm_90", "sm_100")  # the GPUs the book's kernels are written for (README)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_ARCH_OPTION = re.compile(r"^-arch=(sm_\d+[a-z]?)$")


def arch_of(compute_capability: tuple[int, int]) -> str:
    """The nvcc/NVRTC architecture of a compute capability: (9, 0) -> sm_90, (10, 0) -> sm_100."""
    major, minor = (int(v) for v in compute_capability)
    return f"sm_{major}{minor}"


def device_arch() -> str:
    """The architecture of the current GPU (needs one)."""
    from launchlab.gpu import device

    return arch_of(device.compute_capability())


def expand_source(path: Path) -> str:
    """The file's text with local includes pasted in, each header once (as #pragma once would have it)."""
    return _expand(Path(path).resolve(), (), set())


def _expand(path: Path, chain: tuple, pasted: set) -> str:
    if path in chain:
        raise ValueError(f"include cycle through {path.name}")
    text = path.read_text()

    def paste(match: re.Match) -> str:
        name = match.group(1)
        header = (path.parent / name).resolve()
        if not header.exists():
            raise FileNotFoundError(f"{path.name} includes {name!r}, which is not in {path.parent}")
        if header in pasted:
            return f"// ---- {name} (pasted above) ----"
        expanded = _expand(header, chain + (path,), pasted)
        pasted.add(header)
        return f"// ---- {name} ----\n{expanded}\n// ---- end {name} ----"

    return _INCLUDE.sub(paste, text)


def compile_options(defines: dict | None = None, extra: tuple[str, ...] = (), arch: str | None = None) -> tuple[str, ...]:
    """The house options for `arch` (default: the current GPU's), `extra` ones (e.g. --fmad=false) and -D
    defines, in a stable order."""
    return ((STANDARD, f"-arch={arch or device_arch()}") + tuple(extra)
            + tuple(f"-D{k}" if v is None else f"-D{k}={v}" for k, v in sorted((defines or {}).items())))


def arch_in(options) -> str | None:
    """The architecture named by a build's options."""
    return next((m.group(1) for m in map(_ARCH_OPTION.match, options) if m), None)


@dataclasses.dataclass
class BuiltModule:
    family: str
    options: tuple[str, ...]
    source: str
    module: object  # cupy.RawModule

    @property
    def arch(self) -> str | None:
        return arch_in(self.options)

    @property
    def source_sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def kernel(self, name: str):
        return self.module.get_function(name)

    def resources(self, names) -> dict:
        """Registers, shared, local bytes per kernel, as the loaded binary reports them."""
        report = {}
        for name in names:
            attributes = self.kernel(name).attributes
            report[name] = {
                "registers": int(attributes["num_regs"]),
                "shared_bytes": int(attributes["shared_size_bytes"]),
                "local_bytes": int(attributes["local_size_bytes"]),
                "max_threads_per_block": int(attributes["max_threads_per_block"]),
                "binary_version": int(attributes["binary_version"]),
            }
        return report


def load_module(family: str, defines: dict | None = None, extra_options: tuple[str, ...] = (),
                arch: str | None = None, **module_options) -> BuiltModule:
    """Compile kernels/<family>.cu with NVRTC through CuPy, for `arch` (default: the current GPU's)."""
    import cupy

    source = expand_source(KERNEL_DIR / f"{family}.cu")
    options = compile_options(defines, extra_options, arch)
    module = cupy.RawModule(code=source, options=options, **module_options)
    module.compile()
    return BuiltModule(family, options, source, module)


def parse_ptxas(report: str) -> dict:
    """{kernel: {registers, shared_bytes, stack_bytes, spill_stores, spill_loads, local_bytes}}."""
    kernels: dict[str, dict] = {}
    current = None
    for line in report.splitlines():
        if m := re.search(r"(?:Compiling entry function|Function properties for) '?([A-Za-z_]\w*)'?", line):
            current = kernels.setdefault(m.group(1), {"registers": 0, "shared_bytes": 0, "stack_bytes": 0,
                                                      "spill_stores": 0, "spill_loads": 0, "local_bytes": 0})
        elif current is None:
            continue
        if m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            current["stack_bytes"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        if m := re.search(r"Used (\d+) registers", line):
            current["registers"] = int(m.group(1))
            if s := re.search(r"(\d+) bytes smem", line):
                current["shared_bytes"] = int(s.group(1))
            if lm := re.search(r"(\d+) bytes lmem", line):
                current["local_bytes"] = int(lm.group(1))
    return kernels


def nvcc_report(family: str, defines: dict | None = None, options: tuple[str, ...] | None = None,
                arch: str | None = None) -> dict | None:
    """ptxas resources, PTX and SASS from nvcc for the same source and options (the loaded module's
    `options` where given, else the house options with `defines` for `arch`); None without nvcc."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None
    source = expand_source(KERNEL_DIR / f"{family}.cu")
    options = tuple(options) if options is not None else compile_options(defines, arch=arch)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / f"{family}.cu").write_text(source)
        cubin = subprocess.run([nvcc, *options, "-cubin", "-Xptxas", "-v", "-o", str(scratch / "k.cubin"),
                                str(scratch / f"{family}.cu")], capture_output=True, text=True)
        if cubin.returncode != 0:
            raise RuntimeError(f"nvcc failed on kernels/{family}.cu:\n{cubin.stderr}")
        subprocess.run([nvcc, *options, "-ptx", "-o", str(scratch / "k.ptx"), str(scratch / f"{family}.cu")],
                       capture_output=True, text=True, check=True)
        sass = None
        if shutil.which("cuobjdump"):
            dump = subprocess.run(["cuobjdump", "-sass", str(scratch / "k.cubin")], capture_output=True, text=True)
            sass = dump.stdout if dump.returncode == 0 else None
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        return {
            "nvcc": version,
            "options": list(options),
            "ptxas_log": cubin.stderr,
            "resources": parse_ptxas(cubin.stderr),
            "ptx": (scratch / "k.ptx").read_text(),
            "sass": sass,
        }


def save_build(writer, label: str, built: BuiltModule, kernel_names) -> dict:
    """Write the build record of one module into a run: options, hashes, resources, PTX, SASS."""
    report = nvcc_report(built.family, options=built.options)
    record = {
        "family": built.family,
        "options": list(built.options),
        "arch": built.arch,
        "compiler": "NVRTC via cupy.RawModule",
        "source_sha256": built.source_sha256,
        "resources_loaded": built.resources(kernel_names),
        "nvcc": None,
    }
    writer.write_text(f"builds/{label}/source.cu", built.source)
    if report:
        record["nvcc"] = {"version": report["nvcc"], "resources": report["resources"]}
        writer.write_text(f"builds/{label}/ptxas.log", report["ptxas_log"])
        writer.write_text(f"builds/{label}/module.ptx.gz", report["ptx"])  # gzip-compressed (zcat reads it)
        if report["sass"]:  # SASS runs to megabytes per module: kept gzip-compressed (zcat reads it)
            writer.write_text(f"builds/{label}/module.sass.gz", report["sass"])
    writer.write_json(f"builds/{label}/record.json", record)
    return record
