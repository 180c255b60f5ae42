"""Every kernel in kernels/ compiles for sm_90 with nvcc: no spills, no local memory."""
import shutil
import subprocess

import pytest

from launchlab.gpu import build
from launchlab.gpu import native

pytestmark = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
FAMILIES = sorted(p.stem for p in build.KERNEL_DIR.glob("*.cu"))
VARIANTS = {"row_softmax": [None, {"LAUNCHLAB_TRACE": None}]}


def test_there_are_kernels():
    assert {"row_softmax", "empty"} <= set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_kernel_family_compiles_without_spills_or_local_memory(family):
    for defines in VARIANTS.get(family, [None]):
        report = build.nvcc_report(family, defines)
        assert report["resources"], f"ptxas reported no kernels for {family}"
        for kernel, resources in report["resources"].items():
            assert resources["spill_stores"] == resources["spill_loads"] == 0, (family, defines, kernel, resources)
            assert resources["stack_bytes"] == resources["local_bytes"] == 0, (family, defines, kernel, resources)
        assert f".target {build.ARCH}" in report["ptx"]


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
def test_native_launch_loop_builds(tmp_path):
    library, how = native.build_library(tmp_path)
    assert library is not None, how
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    assert "launch_loop" in symbols and "launch_loop_init" in symbols
