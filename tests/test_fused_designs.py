"""CPU: the softmax designs (kernels/softmax_designs.cu) and the row kernel (kernels/fused_softmax.cu) compile for
sm_90 in every configuration the launch policy can consider (chapters/fusion/plans.candidates) and that the GPU
tests force, without spills or local memory and with the registers the cost model assumes; the candidates and
their configurations hold each shape they are offered for, edge shapes included."""
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from launchlab.chapters.fusion import plans
from launchlab.gpu import build
from launchlab.model import fused_cost
from launchlab.model import fused_policy as designs

from test_gpu_fused_designs import POLICY_SHAPES, forced_configurations  # noqa: E402

ARCH = "sm_90"  # the H200 of the book's runs
H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448,
        "shared_bytes_per_sm": 233472}
SMS = H200["sm_count"]
NVCC = shutil.which("nvcc")
KERNELS_OF_DESIGN = {number: sorted(designs.KERNELS[design].values()) for design, number in designs.DESIGN_DEFINE.items()}
KERNELS_OF_DESIGN[0] = sorted(name for names in KERNELS_OF_DESIGN.values() for name in names)
EDGES = [(1, 1), (1, 2), (1, 3), (1, 1 << 21), (65536, 1), (3, 1 << 21), (7, 3), (2, 509), (2, 510), (257, 1025),
         (33, 99999), (4099, 17), (1823, 781), (64, 1 << 20), (65536, 1024)]
# A grid over the plane (rows and row lengths at every power of two and off it) with the edges: where the policy
# can go. Every build any candidate there needs is compiled below.
GRID = sorted({(r, c) for r in (1, 2, 3, 7, 31, 64, 131, 132, 133, 500, 1024, 4097, 20000, 65536)
               for c in (1, 3, 17, 64, 127, 509, 1000, 2047, 4099, 10000, 32768, 65537, 200001, 1 << 21)
               if 4 * r * c <= fused_cost.MAX_BYTES} | set(EDGES) | set(POLICY_SHAPES))


def every_candidate_build() -> dict:
    """{module: (family, defines)} of every candidate of every GRID shape."""
    found = {}
    for rows, cols in GRID:
        for plan in plans.candidates(rows, cols, H200):
            found[plan["module"]] = (plan["family"], plan["defines"])
    return found


def every_configuration() -> list[tuple[str, dict]]:
    """(family, defines) of the candidates' builds, of the builds only the calibration times, and of the builds the
    GPU tests force, each once."""
    found = dict(every_candidate_build())
    for rows, cols in GRID:
        for plan in plans.candidates(rows, cols, H200, every_build=True):
            found[plan["module"]] = (plan["family"], plan["defines"])
    for _, defines in forced_configurations(SMS):
        found[designs.module_label("forced", defines)] = (designs.FAMILY, defines)
    found["all"] = (designs.FAMILY, {})  # the default build: all three designs
    return list(found.values())


def ptxas(family: str, defines: dict, directory: Path) -> dict:
    """nvcc -cubin -Xptxas -v of the expanded source with the house options: ptxas's resources."""
    source = directory / f"{family}_{abs(hash(tuple(sorted(defines.items()))))}.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{family}.cu"))
    result = subprocess.run([NVCC, *build.compile_options(defines, arch=ARCH), "-cubin", "-Xptxas", "-v",
                             "-o", str(source.with_suffix(".cubin")), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed for {family} {defines}:\n{result.stderr}"
    return build.parse_ptxas(result.stderr)


def test_the_candidates_cover_every_design_and_their_builds_are_few():
    builds = every_candidate_build()
    by_design = {}
    for family, defines in builds.values():
        by_design.setdefault(family if family != designs.FAMILY else defines["DESIGN"], []).append(defines)
    assert {d["ROW_CHUNKS"] for d in by_design[1]} == set(plans.CANDIDATE_NARROW_ROW_CHUNKS)
    assert {d["CLUSTER"] for d in by_design[2]} == set(plans.CANDIDATE_CLUSTERS)
    assert {d["SLICE_REGS"] for d in by_design[2]} == set(plans.CANDIDATE_SLICE_REGS)
    assert {d["BLOCK"] for d in by_design[3]} == {designs.SPLIT_BLOCK, 256}
    assert len(builds) <= 60  # a handful per design and row build: the chapter builds only the picked ones


@pytest.mark.slow
@pytest.mark.skipif(not NVCC, reason="nvcc is not on PATH")
def test_every_configuration_compiles_without_spills_with_the_models_registers(tmp_path):
    configurations = every_configuration()
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda fd: ptxas(*fd, tmp_path), configurations))
    for (family, defines), report in zip(configurations, reports):
        if family == designs.FAMILY:
            assert sorted(report) == KERNELS_OF_DESIGN[defines.get("DESIGN", 0)], defines
        for kernel, resources in report.items():
            assert resources["spill_stores"] == resources["spill_loads"] == 0, (defines, kernel, resources)
            assert resources["stack_bytes"] == resources["local_bytes"] == 0, (defines, kernel, resources)
            assert resources["registers"] <= 65536 // defines.get("BLOCK", 256), (defines, kernel, resources)
        if "REGISTERS_MIN_BLOCKS" in defines:  # the registers-only build: its own bound, the whole SM
            for kernel in plans.REGISTERS_KERNELS:
                assert report[kernel]["registers"] * defines["BLOCK"] * defines["REGISTERS_MIN_BLOCKS"] <= 65536, (
                    defines, kernel, report[kernel])
        registers = max(r["registers"] for r in report.values())
        if defines.get("DESIGN") == 1 and defines.get("SCALAR"):
            assert registers <= fused_cost.SCALAR_REGISTERS[defines["ROW_CHUNKS"]], defines
        elif defines.get("DESIGN") == 1 and defines.get("BLOCK") == plans.NARROW_BLOCK:
            table = fused_cost.NARROW_PREFETCH_REGISTERS if defines.get("PREFETCH") else fused_cost.NARROW_REGISTERS
            assert registers <= table[defines["ROW_CHUNKS"]], defines
        if defines.get("DESIGN") == 2 and defines.get("SLICE_REGS") in fused_cost.CLUSTER_REGISTERS:
            assert registers <= fused_cost.CLUSTER_REGISTERS[defines["SLICE_REGS"]], defines
        if defines.get("DESIGN") == 3 and defines.get("BLOCK") == designs.SPLIT_BLOCK:
            assert registers <= fused_cost.SPLIT_REGISTERS


@pytest.mark.slow
@pytest.mark.skipif(not NVCC, reason="nvcc is not on PATH")
@pytest.mark.parametrize("width", [8, 16])
def test_cluster_kernels_carry_their_cluster_dims(tmp_path, width):
    source = tmp_path / "designs.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{designs.FAMILY}.cu"))
    ptx = tmp_path / "designs.ptx"
    subprocess.run([NVCC, *build.compile_options({"CLUSTER": width, "DESIGN": 2}, arch=ARCH), "-ptx", "-o", str(ptx),
                    str(source)], check=True, capture_output=True)
    assert ptx.read_text().count(f".reqnctapercluster {width}, 1, 1") == 2  # the two cluster kernels, no others


# ---------------------------------------------------------------- the candidates hold their shapes
@pytest.mark.parametrize("shape", GRID)
def test_every_candidate_holds_its_shape(shape):
    """Each candidate's configuration holds the worst-aligned row: a narrow build's 32 lanes, a cluster slice in
    its registers or shared memory, the row kernel's tier; the row kernel is always a candidate."""
    rows, cols = shape
    chunks = designs.worst_chunks(rows, cols)
    found = plans.candidates(rows, cols, H200)
    assert found[0]["design"] == "row" and len({p["tag"] + p["module"] for p in found}) == len(found)
    for plan in found:
        d = plan["defines"]
        if plan["design"] == "narrow" and d.get("SCALAR"):
            lanes = designs.narrow_lanes(rows, cols, d["ROW_CHUNKS"], scalar=True)
            assert lanes * d["ROW_CHUNKS"] >= cols and lanes <= 32 and d["BLOCK"] == designs.SCALAR_BLOCK
        elif plan["design"] == "narrow":
            lanes = designs.narrow_lanes(rows, cols, d["ROW_CHUNKS"])
            assert lanes * d["ROW_CHUNKS"] >= chunks and lanes <= 32
        elif plan["design"] == "cluster":
            slice_chunks = -(-chunks // d["CLUSTER"])
            assert (slice_chunks <= d["SLICE_REGS"] * d["BLOCK"]
                    or 16 * slice_chunks <= H200["shared_bytes_per_block_optin"] - designs.SHARED_RESERVED_PER_BLOCK)
            assert rows * d["CLUSTER"] <= plans.CANDIDATE_MAX_BLOCKS_PER_SM * SMS
        elif plan["design"] == "split":
            assert d["BLOCK"] == 256 or rows < plans.SPLIT_MAX_ROWS_PER_SM * SMS
        else:
            assert plan["tier"] == plans.fused_tier(rows, cols, plan["block"], plan["shared_bytes"],
                                                    d["REG_CHUNKS"])


def test_narrow_lanes_are_the_fewest_that_hold_the_row():
    assert designs.narrow_lanes(77, 29, 8) == 1       # (3 + 29 + 3) // 4 = 8 chunks
    assert designs.narrow_lanes(77, 29, 1) == 8
    assert designs.narrow_lanes(1, 29, 1) == 8        # a single row starts aligned: 8 chunks
    assert designs.narrow_lanes(2, 509, 4) == 32      # 128 chunks
    with pytest.raises(ValueError, match="does not fit 32 lanes"):
        designs.narrow_lanes(2, 510, 4)               # 129 chunks
    assert designs.narrow_config(77, 29, SMS, lanes=2) == {"BLOCK": 128, "DESIGN": 1, "ROW_CHUNKS": 4}
    assert designs.narrow_config(4096, 512, SMS, row_chunks=8)["ROW_CHUNKS"] == 8
    with pytest.raises(ValueError, match="does not fit"):
        designs.narrow_config(2, 1025, SMS)           # 257 chunks: beyond 32 lanes x 8


def test_cluster_slices_fit_registers_or_shared_memory():
    cluster = {"BLOCK": 256, "CLUSTER": 16, "DESIGN": 2, "UNROLL": designs.CLUSTER_UNROLL}
    assert designs.cluster_config(128, 131072, SMS) == cluster | {"SLICE_REGS": designs.CLUSTER_SLICE_REGS}
    assert designs.cluster_config(128, 262144, SMS, slice_regs=16)["SLICE_REGS"] == 16
    assert designs.cluster_config(4, 57336, SMS, width=2)["SLICE_REGS"] == designs.CLUSTER_SLICE_REGS  # 112 KiB shared
    with pytest.raises(ValueError, match="does not fit a cluster"):
        designs.cluster_config(4, 65536 + 4, SMS, width=2)  # 8193 chunks a block: 131,088 bytes


def test_module_labels_name_every_define():
    assert designs.module_label("split", designs.split_config(1, 1, SMS)) == "softmax_designs_split_block512_design3_unroll4"
    plan = plans.design_plan("narrow", designs.design_defines("narrow", 4096, 512, SMS, row_chunks=4, block=256))
    assert plan["module"] == "softmax_designs_narrow_block256_design1_row_chunks4" and plan["tag"] == "narrow-b256-r4"


def test_without_clusters_no_cluster_is_a_candidate():
    a100 = {"sm_count": 108, "compute_capability": "8.0", "shared_bytes_per_block_optin": 166912}
    for rows, cols in GRID:
        assert all(p["design"] != "cluster" for p in plans.candidates(rows, cols, a100))
        assert plans.fused_plan(rows, cols, a100)["design"] != "cluster"


def test_split_pieces_keep_every_piece_of_a_step_resident():
    for rows in (1, 2, 3, 7, 100, 264, 1000):
        pieces = designs.split_pieces(rows, 264)
        assert pieces * min(rows, 264 // pieces) <= 264
