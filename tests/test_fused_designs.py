"""CPU: the softmax designs (kernels/softmax_designs.cu) compile for sm_90 in every configuration the
launch policy or the sweep can ask for, without spills or local memory, and the policy's boundaries
fall where its constants say."""
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from launchlab.gpu import build
from launchlab.model import fused_policy as designs
from launchlab.model import workloads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import sweep_fused_designs  # noqa: E402

H200 = {"sm_count": 132, "shared_bytes_per_block_optin": 232448, "shared_bytes_per_sm": 233472}
NVCC = shutil.which("nvcc")
KERNELS_OF_DESIGN = {number: sorted(designs.KERNELS[design].values()) for design, number in designs.DESIGN_DEFINE.items()}
KERNELS_OF_DESIGN[0] = sorted(name for names in KERNELS_OF_DESIGN.values() for name in names)
# The shapes of the fusion chapter, the GPU tests' irregular ones and the sweep's grid.
SHAPES = sorted(set(workloads.FUSION_SHAPES) | {(1823, 781), (1, 1), (5, 1), (1, 3), (64, 1021), (8, 65536),
                                                 (2, 1_000_003), (300, 5001)} | set(sweep_fused_designs.SHAPES))


def every_configuration() -> list[dict]:
    """The distinct defines the policy picks for SHAPES, and those the sweep and the GPU tests force."""
    found = {}
    for rows, cols in SHAPES:
        defines = [designs.launch_policy(rows, cols, H200)[1]["defines"]]
        defines += [d for _, d, _ in sweep_fused_designs.candidates(rows, cols, H200)]
        for d in defines:
            found[tuple(sorted(d.items()))] = d
    for lanes in (1, 2, 4, 8, 16, 32):  # tests/test_gpu_fused_designs.py forces every lane count
        d = designs.design_defines("narrow", 77, 61, 132, lanes=lanes)
        found[tuple(sorted(d.items()))] = d
    for width in (1, 2, 4, 8, 16):
        d = designs.design_defines("cluster", 3, 4099, 132, cluster=width)
        found[tuple(sorted(d.items()))] = d
    found[()] = {}  # the default build: all three designs
    return list(found.values())


def ptxas(defines: dict, directory: Path) -> dict:
    """nvcc -cubin -Xptxas -v of the expanded source with the house options: ptxas's resources."""
    source = directory / f"{designs.FAMILY}_{abs(hash(tuple(sorted(defines.items()))))}.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{designs.FAMILY}.cu"))
    result = subprocess.run([NVCC, *build.compile_options(defines), "-cubin", "-Xptxas", "-v",
                             "-o", str(source.with_suffix(".cubin")), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed for {defines}:\n{result.stderr}"
    return build.parse_ptxas(result.stderr)


@pytest.mark.slow
@pytest.mark.skipif(not NVCC, reason="nvcc is not on PATH")
def test_every_configuration_compiles_without_spills_or_local_memory(tmp_path):
    configurations = every_configuration()
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda d: ptxas(d, tmp_path), configurations))
    for defines, report in zip(configurations, reports):
        assert sorted(report) == KERNELS_OF_DESIGN[defines.get("DESIGN", 0)], defines
        for kernel, resources in report.items():
            assert resources["spill_stores"] == resources["spill_loads"] == 0, (defines, kernel, resources)
            assert resources["stack_bytes"] == resources["local_bytes"] == 0, (defines, kernel, resources)
            assert resources["registers"] <= 65536 // defines.get("BLOCK", 256), (defines, kernel, resources)


@pytest.mark.slow
@pytest.mark.skipif(not NVCC, reason="nvcc is not on PATH")
@pytest.mark.parametrize("width", [8, 16])
def test_cluster_kernels_carry_their_cluster_dims(tmp_path, width):
    source = tmp_path / "designs.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{designs.FAMILY}.cu"))
    ptx = tmp_path / "designs.ptx"
    subprocess.run([NVCC, *build.compile_options({"CLUSTER": width, "DESIGN": 2}), "-ptx", "-o", str(ptx), str(source)],
                   check=True, capture_output=True)
    text = ptx.read_text()
    assert text.count(f".reqnctapercluster {width}, 1, 1") == 2  # the two cluster kernels, no others


# ---------------------------------------------------------------- the launch policy
def design_of(rows, cols):
    return designs.launch_policy(rows, cols, H200)[0]


def test_policy_on_the_fusion_shapes():
    assert {shape: design_of(*shape) for shape in workloads.FUSION_SHAPES} == {
        (4096, 128): "narrow", (4096, 512): "narrow", (4096, 1024): "narrow",
        (4096, 4096): "cluster", (4096, 16384): "cluster", (128, 65536): "cluster"}


def test_narrow_ends_where_a_row_outgrows_a_warps_registers():
    assert designs.worst_chunks(2, 1024) == designs.NARROW_MAX_CHUNKS and design_of(2, 1024) == "narrow"
    assert designs.worst_chunks(2, 1021) == designs.NARROW_MAX_CHUNKS and design_of(2, 1021) == "narrow"
    assert design_of(2, 1022) == design_of(2, 1025) == "cluster"  # 257 chunks at the worst alignment
    assert design_of(1, 1022) == "narrow"  # a single row starts aligned


def test_narrow_lanes_hold_about_four_chunks_each():
    narrow = {"DESIGN": designs.DESIGN_DEFINE["narrow"]}
    assert designs.launch_policy(4096, 128, H200)[1]["defines"] == narrow | {"BLOCK": 64, "LANES": 8, "ROW_CHUNKS": 4}
    assert designs.launch_policy(4096, 512, H200)[1]["defines"] == narrow | {"BLOCK": 256, "LANES": 32, "ROW_CHUNKS": 4}
    assert designs.launch_policy(4096, 1024, H200)[1]["defines"] == narrow | {"BLOCK": 256, "LANES": 32, "ROW_CHUNKS": 8}
    assert designs.launch_policy(1823, 781, H200)[1]["defines"]["LANES"] == 32
    assert designs.launch_policy(7, 1, H200)[1]["defines"] == narrow | {"BLOCK": 32, "LANES": 1, "ROW_CHUNKS": 1}
    for rows, cols in SHAPES:
        design, config = designs.launch_policy(rows, cols, H200)
        if design == "narrow":
            d = config["defines"]
            assert d["LANES"] * d["ROW_CHUNKS"] >= designs.worst_chunks(rows, cols) and d["ROW_CHUNKS"] <= 8


def test_narrow_blocks_shrink_until_every_sm_has_two():
    assert designs.narrow_block(4096, 8, 132) == 64      # 512 blocks of 8 rows
    assert designs.narrow_block(4096, 32, 132) == 256    # 512 blocks of 8 rows
    assert designs.narrow_block(100, 32, 132) == 32      # too few rows for any: the smallest


def test_cluster_widens_to_fill_the_gpu_and_to_fit_the_slice():
    widths = {shape: designs.launch_policy(*shape, H200)[1]["defines"]["CLUSTER"]
              for shape in [(4096, 4096), (4096, 16384), (128, 65536), (16, 300000), (300, 2048)]}
    assert widths == {(4096, 4096): 1, (4096, 16384): 1, (128, 65536): 8, (16, 300000): 16, (300, 2048): 2}
    for shape in [(128, 65536), (16, 300000), (9, 458752)]:
        width = designs.cluster_width(*shape, 132)
        assert 16 * -(-designs.worst_chunks(*shape) // width) <= designs.CLUSTER_SLICE_BYTES


def test_split_takes_rows_no_cluster_holds():
    longest = designs.MAX_CLUSTER * designs.CLUSTER_SLICE_BYTES // 4  # floats of the longest clustered row
    assert design_of(16, longest) == "cluster"
    assert design_of(16, longest + 4) == "split"
    assert design_of(4096, longest + 4) == "split"


def test_split_takes_few_long_rows():
    few = (132 - 1) // designs.MAX_CLUSTER  # 8 rows: 128 blocks of the widest clusters, SMs idle
    assert design_of(few, designs.SPLIT_FEW_ROWS_MIN_COLS) == "split"
    assert design_of(few + 1, designs.SPLIT_FEW_ROWS_MIN_COLS) == "cluster"
    assert design_of(few, designs.SPLIT_FEW_ROWS_MIN_COLS - 4) == "cluster"
    assert design_of(1, 4_000_000) == "split"


def test_policy_rejects_empty_shapes():
    for shape in [(0, 4), (4, 0)]:
        with pytest.raises(ValueError):
            designs.launch_policy(*shape, H200)


def test_split_pieces_keep_every_piece_of_a_step_resident():
    assert designs.split_pieces(1, 264) == 264
    assert designs.split_pieces(2, 264) == 132
    assert designs.split_pieces(300, 264) == 1
    for rows in (1, 2, 3, 7, 100, 264, 1000):
        pieces = designs.split_pieces(rows, 264)
        assert pieces * min(rows, 264 // pieces) <= 264


def test_module_labels_name_every_define():
    design, config = designs.launch_policy(128, 65536, H200)
    assert config["module"] == "softmax_designs_cluster_block256_cluster8_design2_unroll4"


def test_design_defines_take_overrides():
    assert designs.design_defines("narrow", 77, 61, 132, lanes=4) == {"BLOCK": 32, "DESIGN": 1, "LANES": 4,
                                                                      "ROW_CHUNKS": 4}
    assert designs.design_defines("cluster", 3, 4099, 132, cluster=2)["CLUSTER"] == 2
    with pytest.raises(ValueError):
        designs.design_defines("nowhere", 1, 1, 132)
