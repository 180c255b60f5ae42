"""CPU: every kernel family compiles for each GPU architecture the book's kernels are written for
(gpu/build.ARCHES: sm_80, sm_89, sm_90, sm_100): nvcc to PTX, then ptxas on that PTX, with the options and -D
defines the chapters build it with (one representative set per family, and the traced builds). Below sm_90 the
code that needs compute capability 9.0 (kernels/arch.cuh) is compiled out: no cluster or PDL instruction is
left, and a module holds the same kernels on every architecture."""
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from launchlab.chapters import fusion
from launchlab.chapters.fusion import copy_kernel, plans
from launchlab.chapters.megakernels.targets import fused_defines
from launchlab.chapters.example_a_pointwise import model as pointwise
from launchlab.gpu import build
from launchlab.model import fused_policy

NVCC = shutil.which("nvcc")
PTXAS = shutil.which("ptxas") or (NVCC and str(Path(NVCC).with_name("ptxas")))
H200 = {"sm_count": 132, "shared_bytes_per_block_optin": 232448}  # the defines the book's runs built with
TRACED = {"LAUNCHLAB_TRACE": None}
HOPPER_ONLY = ("griddepcontrol", "barrier.cluster", "mapa.", "%cluster", ".reqnctapercluster")
_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.MULTILINE)


def design(name: str, rows: int, cols: int) -> dict:
    return fused_policy.design_defines(name, rows, cols, H200["sm_count"])


# (family, defines, extra options) as the chapters build them: ordinary_launches and graphs (row_softmax,
# tiled_softmax, empty), fusion (instruments, the row kernel at a shape of each tier's kind, the three designs),
# megakernels (tiled_softmax, megakernel, megakernel_designs and megakernel_flow timed and traced, the packed row
# kernel, the chain's plain builds: chain_tiled, chain_flow, fused_softmax_chain, the varlen kernel),
# Examples A (pointwise, FMA contraction off) and B (jobs, timed and traced).
BUILDS = [
    ("empty", None, ()),
    ("instruments", None, ()),
    ("copy", copy_kernel.DEFINES, ()),
    ("row_softmax", None, ()),
    ("row_softmax", TRACED, ()),
    ("tiled_softmax", None, ()),
    ("tiled_softmax", TRACED, ()),
    ("fused_softmax", fusion.fused_config(4096, 4096, H200["shared_bytes_per_block_optin"], H200["sm_count"])["defines"], ()),
    ("fused_softmax", fused_defines(H200["shared_bytes_per_block_optin"]), ()),
    ("fused_row_registers", plans.registers_only_variants(2333, 989)[0]["defines"], ()),  # calibration only
    ("narrow_full", plans.narrow_full_twin(plans.design_plan("narrow", design("narrow", 4096, 31)))["defines"], ()),
    ("softmax_designs", design("narrow", 4096, 512), ()),
    ("softmax_designs", design("cluster", 128, 131072), ()),
    ("softmax_designs", design("split", 16, 1_000_000), ()),
    ("megakernel", None, ()),
    ("megakernel", TRACED, ()),
    ("megakernel_designs", None, ()),
    ("megakernel_designs", TRACED, ()),
    ("megakernel_flow", None, ()),
    ("megakernel_flow", TRACED, ()),
    ("chain_flow", None, ()),
    ("chain_tiled", None, ()),
    ("fused_softmax_chain", fused_defines(H200["shared_bytes_per_block_optin"]), ()),
    ("varlen_softmax", None, ()),
    ("pointwise", None, pointwise.COMPILE_OPTIONS),
    ("jobs", None, ()),
    ("jobs", TRACED, ()),
]


def compile_for(arch: str, family: str, defines, extra, scratch: Path) -> dict:
    """nvcc -ptx of the expanded source, then ptxas on that PTX (which refuses an instruction the architecture
    lacks, as the driver's JIT of NVRTC's PTX would); {"error", "entries", "ptx"}."""
    options = build.compile_options(defines, tuple(extra), arch=arch)
    source = Path(tempfile.mkdtemp(dir=scratch)) / f"{family}.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{family}.cu"))
    ptx = source.with_suffix(".ptx")
    for command in ([NVCC, *options, "-ptx", "-o", str(ptx), str(source)],
                    [PTXAS, f"-arch={arch}", "-o", str(source.with_suffix(".cubin")), str(ptx)]):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return {"error": f"{' '.join(command)}\n{result.stderr}", "entries": set(), "ptx": ""}
    text = ptx.read_text()
    return {"error": None, "entries": set(_ENTRY.findall(text)), "ptx": text}


def test_every_family_has_a_build():
    assert {family for family, _, _ in BUILDS} == {p.stem for p in build.KERNEL_DIR.glob("*.cu")}
    assert build.ARCHES == ("sm_80", "sm_89", "sm_90", "sm_100")


@pytest.mark.slow
@pytest.mark.skipif(not (NVCC and PTXAS and Path(PTXAS).exists()), reason="nvcc or ptxas is not on PATH")
def test_every_family_builds_for_every_architecture(tmp_path):
    jobs = [(arch, *b) for arch in build.ARCHES for b in BUILDS]
    with ThreadPoolExecutor(max(2, min(8, os.cpu_count() or 2))) as pool:
        results = list(pool.map(lambda job: compile_for(*job, tmp_path), jobs))
    report = {(arch, family, str(defines)): result for (arch, family, defines, _), result in zip(jobs, results)}
    failed = {key: result["error"] for key, result in report.items() if result["error"]}
    assert not failed, "\n\n".join(f"{key}:\n{error}" for key, error in failed.items())
    for (arch, family, defines), result in report.items():
        assert result["entries"], (arch, family, defines)
        assert result["entries"] == report["sm_90", family, defines]["entries"], (arch, family, defines)
        hopper = [word for word in HOPPER_ONLY if word in result["ptx"]]
        if build.ARCHES.index(arch) < build.ARCHES.index("sm_90"):
            assert not hopper, (arch, family, defines, hopper)
    # what the guards keep on 9.0 and later: the cluster design's clusters, PDL and DSMEM in the megakernel designs
    for arch in ("sm_90", "sm_100"):
        cluster = report[arch, "softmax_designs", str(design("cluster", 128, 131072))]["ptx"]
        assert cluster.count(".reqnctapercluster 16, 1, 1") == 2
        designs = report[arch, "megakernel_designs", "None"]["ptx"]
        assert all(word in designs for word in ("griddepcontrol.wait", "griddepcontrol.launch_dependents",
                                                "barrier.cluster.arrive", "mapa"))
