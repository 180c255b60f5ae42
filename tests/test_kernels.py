"""Every kernel in kernels/ compiles for sm_90 with nvcc: no spills, no local memory; how sources are expanded and
which architecture a build names (tests/test_kernel_arches.py builds for every architecture)."""
import shutil
import subprocess

import pytest

from launchlab.gpu import build
from launchlab.gpu import native

ARCH = "sm_90"  # the H200 of the book's runs

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
FAMILIES = sorted(p.stem for p in build.KERNEL_DIR.glob("*.cu"))
VARIANTS = {"row_softmax": [None, {"LAUNCHLAB_TRACE": None}]}


def test_there_are_kernels():
    assert {"row_softmax", "empty"} <= set(FAMILIES)


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("family", FAMILIES)
def test_kernel_family_compiles_without_spills_or_local_memory(family):
    for defines in VARIANTS.get(family, [None]):
        report = build.nvcc_report(family, defines, arch=ARCH)
        assert report["resources"], f"ptxas reported no kernels for {family}"
        for kernel, resources in report["resources"].items():
            assert resources["spill_stores"] == resources["spill_loads"] == 0, (family, defines, kernel, resources)
            assert resources["stack_bytes"] == resources["local_bytes"] == 0, (family, defines, kernel, resources)
        assert f".target {ARCH}" in report["ptx"]


def test_ptxas_report_parsing():
    log = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes lmem, 1024 bytes smem, 400 bytes cmem[0]"""
    assert build.parse_ptxas(log) == {"k": {"registers": 40, "shared_bytes": 1024, "stack_bytes": 8,
                                            "spill_stores": 4, "spill_loads": 4, "local_bytes": 16}}


def test_missing_include_is_named(tmp_path):
    source = tmp_path / "bad.cu"
    source.write_text('#include "nowhere.cuh"\n')
    with pytest.raises(FileNotFoundError, match="includes 'nowhere.cuh'"):
        build.expand_source(source)


@pytest.mark.slow
@needs_nvcc
def test_native_launch_loop_builds(tmp_path):
    library, how = native.build_library(tmp_path)
    assert library is not None, how
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    assert "launch_loop" in symbols and "launch_loop_init" in symbols


def test_a_header_included_twice_is_pasted_once_and_a_cycle_is_refused(tmp_path):
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\nint a;\n')
    (tmp_path / "b.cuh").write_text("int b;\n")
    (tmp_path / "k.cu").write_text('#include "a.cuh"\n#include "b.cuh"\nint k;\n')
    expanded = build.expand_source(tmp_path / "k.cu")
    assert expanded.count("int b;") == 1 and expanded.index("int b;") < expanded.index("int a;")
    assert "// ---- b.cuh (pasted above) ----" in expanded
    (tmp_path / "b.cuh").write_text('#include "a.cuh"\n')
    with pytest.raises(ValueError, match="include cycle"):
        build.expand_source(tmp_path / "k.cu")


def test_the_architecture_comes_from_the_compute_capability_or_is_named():
    assert [build.arch_of(c) for c in ((8, 0), (8, 9), (9, 0), (10, 0))] == list(build.ARCHES)
    options = build.compile_options({"BLOCK": 128}, ("--fmad=false",), arch="sm_89")
    assert options == ("-std=c++17", "-arch=sm_89", "--fmad=false", "-DBLOCK=128")
    assert build.arch_in(options) == "sm_89" and build.arch_in(("-std=c++17",)) is None
