"""CPU: the softmax designs (kernels/softmax_designs.cu) compile for sm_90 in every configuration the
launch policy, the chapter's compute-sanitizer cases or the GPU tests can ask for, without spills or local
memory, and the declared launch policy (model/fused_policy.design_for) and its configurations fall where
its constants say."""
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from launchlab.chapters import fusion
from launchlab.chapters.fusion import sanitize
from launchlab.gpu import build
from launchlab.model import fused_policy as designs
from launchlab.model import workloads

ARCH = "sm_90"  # the H200 of the book's runs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import sweep_fused_designs  # noqa: E402

from test_gpu_fused_designs import POLICY_SHAPES, forced_configurations  # noqa: E402

H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448,
        "shared_bytes_per_sm": 233472}
SMS = H200["sm_count"]
NVCC = shutil.which("nvcc")
KERNELS_OF_DESIGN = {number: sorted(designs.KERNELS[design].values()) for design, number in designs.DESIGN_DEFINE.items()}
KERNELS_OF_DESIGN[0] = sorted(name for names in KERNELS_OF_DESIGN.values() for name in names)
# The shapes of the fusion chapter (fixed and swept), the GPU tests' irregular ones and the development sweep's grid.
SHAPES = sorted(set(workloads.FUSION_SHAPES) | set(fusion.all_shapes(fusion.Parameters())) | set(POLICY_SHAPES)
                | {(1823, 781), (1, 1), (5, 1), (1, 3), (64, 1021), (8, 65536), (2, 1_000_003), (300, 5001)}
                | set(sweep_fused_designs.SHAPES))


def policy_defines(rows, cols, sm_count=SMS):
    """(design, defines) the policy picks for a shape; defines None for the row kernel (kernels/fused_softmax.cu)."""
    design = designs.design_for(rows, cols, sm_count, H200["compute_capability"])
    return design, (None if design == "row" else designs.design_defines(design, rows, cols, sm_count))


def every_configuration() -> list[dict]:
    """The distinct defines the policy picks for SHAPES, those of the sanitizer's cases and those the GPU tests force."""
    found = {}
    picked = [policy_defines(rows, cols)[1] for rows, cols in SHAPES]
    sanitized = [designs.design_defines(design, rows, cols, SMS,
                                        **{k: v for k, v in choices.items() if k not in sanitize.TARGET_OPTIONS})
                 for _, design, rows, cols, choices in sanitize.CASES if design != "row"]
    forced = [defines for _, defines in forced_configurations(SMS)]
    for d in picked + sanitized + forced:
        if d is not None:
            found[tuple(sorted(d.items()))] = d
    found[()] = {}  # the default build: all three designs
    return list(found.values())


def ptxas(defines: dict, directory: Path) -> dict:
    """nvcc -cubin -Xptxas -v of the expanded source with the house options: ptxas's resources."""
    source = directory / f"{designs.FAMILY}_{abs(hash(tuple(sorted(defines.items()))))}.cu"
    source.write_text(build.expand_source(build.KERNEL_DIR / f"{designs.FAMILY}.cu"))
    result = subprocess.run([NVCC, *build.compile_options(defines, arch=ARCH), "-cubin", "-Xptxas", "-v",
                             "-o", str(source.with_suffix(".cubin")), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed for {defines}:\n{result.stderr}"
    return build.parse_ptxas(result.stderr)


def test_the_compiled_configurations_cover_every_design_and_place():
    """What the compile test below builds: each design, narrow at every lane count, clusters at every width with
    slices in shared memory and in registers (1 to CLUSTER_MAX_SLICE_REGS chunks per thread)."""
    configurations = every_configuration()
    by_design = {number: [d for d in configurations if d.get("DESIGN") == number] for number in (1, 2, 3)}
    assert {d["LANES"] for d in by_design[1]} == {1, 2, 4, 8, 16, 32}
    assert {d["CLUSTER"] for d in by_design[2]} == {1, 2, 4, 8, 16}
    assert {d["SLICE_REGS"] for d in by_design[2]} == {0, 1, 2, 4, 8, 16}
    assert {designs.CLUSTER_MAX_SLICE_REGS, 0} <= {d["SLICE_REGS"] for d in by_design[2] if d["CLUSTER"] == 16}
    assert by_design[3] and all(d["BLOCK"] == designs.SPLIT_BLOCK for d in by_design[3])
    picked = {tuple(sorted(d.items())) for d in (policy_defines(*s)[1] for s in SHAPES) if d}
    assert picked <= {tuple(sorted(d.items())) for d in configurations}


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
    subprocess.run([NVCC, *build.compile_options({"CLUSTER": width, "DESIGN": 2}, arch=ARCH), "-ptx", "-o", str(ptx), str(source)],
                   check=True, capture_output=True)
    text = ptx.read_text()
    assert text.count(f".reqnctapercluster {width}, 1, 1") == 2  # the two cluster kernels, no others


# ---------------------------------------------------------------- the launch policy
def design_of(rows, cols, sm_count=SMS, capability=(9, 0)):
    return designs.design_for(rows, cols, sm_count, capability)


def test_policy_on_the_fusion_shapes():
    """The chapter's fixed shapes: narrow up to 512 floats a row, the one-block-per-row kernel above (128 x 65536
    has fewer rows than SMs but rows shorter than CLUSTER_MIN_COLS)."""
    assert {shape: design_of(*shape) for shape in workloads.FUSION_SHAPES} == {
        (4096, 128): "narrow", (4096, 512): "narrow", (4096, 1024): "row",
        (4096, 4096): "row", (4096, 16384): "row", (128, 65536): "row"}


def test_policy_on_the_sweep_grid():
    """The 4096-row series: narrow to 512 floats, then the row kernel; the 128-row series: the row kernel up to
    CLUSTER_MIN_COLS, a cluster from there (128 rows on 132 SMs)."""
    grid = fusion.sweep_grid(fusion.Parameters())
    picks = {shape: design_of(*shape) for series in grid.values() for shape in series}
    assert {s for s, d in picks.items() if d == "narrow"} == {(4096, 256), (4096, 512)}
    assert {s for s, d in picks.items() if d == "cluster"} == {(128, 131072), (128, 200000), (128, 262144)}
    assert set(picks.values()) == {"narrow", "row", "cluster"}  # no sweep row is too long for a cluster


def test_policy_agrees_with_the_gpu_tests_table():
    assert {shape: design_of(*shape) for shape in POLICY_SHAPES} == POLICY_SHAPES


def test_narrow_ends_at_narrow_max_chunks():
    """Rows of at most NARROW_MAX_CHUNKS 16-byte chunks (512 floats) at the worst alignment are narrow."""
    assert designs.NARROW_MAX_CHUNKS == 128
    assert designs.worst_chunks(2, 512) == designs.NARROW_MAX_CHUNKS and design_of(2, 512) == "narrow"
    assert designs.worst_chunks(2, 509) == designs.NARROW_MAX_CHUNKS and design_of(2, 509) == "narrow"
    assert designs.worst_chunks(2, 510) == 129 and design_of(2, 510) == "row"   # 3 floats of lead at the worst
    assert design_of(2, 516) == design_of(4096, 513) == "row"
    assert design_of(1, 510) == design_of(1, 512) == "narrow"  # a single row starts aligned
    assert design_of(1, 513) == "row"


def test_narrow_takes_32_lanes_above_32_chunks():
    """32 lanes per row (fewer only for rows of fewer than 32 chunks, next power of two), chunks per lane the next
    power of two that holds the row; 128-thread blocks up to NARROW_SMALL_ROW_CHUNKS chunks, 256 above."""
    narrow = {"DESIGN": designs.DESIGN_DEFINE["narrow"]}
    assert designs.narrow_config(4096, 128, SMS) == narrow | {"BLOCK": 128, "LANES": 32, "ROW_CHUNKS": 1}
    assert designs.narrow_config(4096, 256, SMS) == narrow | {"BLOCK": 128, "LANES": 32, "ROW_CHUNKS": 2}
    assert designs.narrow_config(4096, 260, SMS) == narrow | {"BLOCK": 256, "LANES": 32, "ROW_CHUNKS": 4}
    assert designs.narrow_config(4096, 512, SMS) == narrow | {"BLOCK": 256, "LANES": 32, "ROW_CHUNKS": 4}
    assert designs.narrow_config(2, 509, SMS) == narrow | {"BLOCK": 256, "LANES": 32, "ROW_CHUNKS": 4}
    assert designs.narrow_config(7, 1, SMS) == narrow | {"BLOCK": 128, "LANES": 1, "ROW_CHUNKS": 1}  # 1 chunk
    assert designs.narrow_config(2, 61, SMS)["LANES"] == 16      # (3 + 61 + 3) // 4 = 16 chunks
    assert designs.narrow_config(2, 65, SMS)["LANES"] == 32      # 17 chunks
    assert designs.NARROW_BLOCKS == {"small": 128, "large": 256} and designs.NARROW_SMALL_ROW_CHUNKS == 64
    for rows, cols in SHAPES:
        design, d = policy_defines(rows, cols)
        if design == "narrow":
            chunks = designs.worst_chunks(rows, cols)
            assert d["LANES"] == min(32, designs.next_power_of_two(chunks)), (rows, cols, d)
            assert d["LANES"] * d["ROW_CHUNKS"] >= chunks and d["ROW_CHUNKS"] <= designs.NARROW_MAX_CHUNKS // 32
            assert d["BLOCK"] == (128 if chunks <= designs.NARROW_SMALL_ROW_CHUNKS else 256)


def test_narrow_refuses_a_row_its_lanes_cannot_hold():
    """At most NARROW_MAX_ROW_CHUNKS chunks per lane: one lane holds a row of 8 chunks (29 floats unaligned), not 16."""
    assert designs.narrow_config(77, 29, SMS, lanes=1)["ROW_CHUNKS"] == designs.NARROW_MAX_ROW_CHUNKS == 8
    with pytest.raises(ValueError, match="does not fit 1 lanes"):
        designs.narrow_config(77, 61, SMS, lanes=1)
    with pytest.raises(ValueError):
        designs.narrow_config(2, 1025, SMS)  # 257 chunks: beyond 32 lanes x 8


def test_cluster_only_for_fewer_rows_than_sms_of_long_rows():
    assert designs.CLUSTER_MIN_COLS == 131072
    assert design_of(SMS - 1, designs.CLUSTER_MIN_COLS) == "cluster"
    assert design_of(SMS, designs.CLUSTER_MIN_COLS) == "row"             # as many rows as SMs: one block per row
    assert design_of(SMS - 1, designs.CLUSTER_MIN_COLS - 1) == "row"
    assert design_of(1, designs.CLUSTER_MIN_COLS) == "cluster"
    assert design_of(100, designs.CLUSTER_MIN_COLS, sm_count=100) == "row"  # the SM count is the device's
    assert design_of(100, designs.CLUSTER_MIN_COLS, sm_count=101) == "cluster"


def test_cluster_keeps_slices_in_registers_up_to_the_max_then_shared_memory():
    """16 blocks of 256 threads per row; SLICE_REGS the next power of two of chunks per thread up to
    CLUSTER_MAX_SLICE_REGS, else 0 (the slice in shared memory)."""
    cluster = {"BLOCK": 256, "CLUSTER": 16, "DESIGN": designs.DESIGN_DEFINE["cluster"], "UNROLL": designs.CLUSTER_UNROLL}
    assert designs.cluster_config(128, 131072, SMS) == cluster | {"SLICE_REGS": 8}   # 32768 chunks: 2048 a block
    assert designs.cluster_config(128, 262144, SMS) == cluster | {"SLICE_REGS": 16}  # 4096 a block: 16 x 256
    assert designs.cluster_config(3, 131075, SMS) == cluster | {"SLICE_REGS": 16}    # 32770 chunks: 2049 a block
    assert designs.cluster_config(128, 262148, SMS) == cluster | {"SLICE_REGS": 0}   # 4097 a block: shared memory
    assert designs.cluster_config(16, 300000, SMS)["SLICE_REGS"] == 0
    assert designs.cluster_config(3, 4099, SMS, width=2)["SLICE_REGS"] == 4           # 1026 chunks: 513 a block
    assert designs.cluster_config(3, 4099, SMS, width=2, block=128)["SLICE_REGS"] == 8
    for rows, cols in SHAPES:
        design, d = policy_defines(rows, cols)
        if design == "cluster":
            slice_chunks = -(-designs.worst_chunks(rows, cols) // d["CLUSTER"])
            if d["SLICE_REGS"]:
                assert d["SLICE_REGS"] * d["BLOCK"] >= slice_chunks and d["SLICE_REGS"] <= designs.CLUSTER_MAX_SLICE_REGS
            else:
                assert designs.CLUSTER_MAX_SLICE_REGS * d["BLOCK"] < slice_chunks
                assert 16 * slice_chunks <= designs.CLUSTER_SLICE_BYTES


def test_cluster_refuses_a_slice_beyond_its_shared_memory():
    with pytest.raises(ValueError, match="does not fit a cluster"):
        designs.cluster_config(4, 65536 + 4, SMS, width=2)  # 8193 chunks a block: 131,088 bytes


def test_split_takes_rows_no_cluster_holds():
    longest = designs.MAX_CLUSTER * designs.CLUSTER_SLICE_BYTES // 4  # floats of the longest clustered row
    assert designs.cluster_holds(16, longest) and not designs.cluster_holds(16, longest + 4)
    assert design_of(16, longest) == "cluster"
    assert design_of(16, longest + 4) == "split"
    assert design_of(SMS - 1, longest + 4) == "split"
    assert design_of(SMS, longest + 4) == "row"      # rows enough for every SM: the row kernel streams them
    assert design_of(4096, longest + 4) == "row"
    assert design_of(1, 4_000_000) == "split"


def test_split_configuration_does_not_depend_on_the_shape():
    split = {"BLOCK": designs.SPLIT_BLOCK, "DESIGN": designs.DESIGN_DEFINE["split"], "UNROLL": designs.SPLIT_UNROLL}
    assert designs.split_config(1, 4_000_000, SMS) == designs.split_config(100, 500_000, SMS) == split
    assert designs.design_defines("split", 2, 1_000_003, SMS) == split


def test_policy_rejects_empty_shapes():
    for shape in [(0, 4), (4, 0), (-1, 4)]:
        with pytest.raises(ValueError, match="empty"):
            designs.design_for(*shape, SMS, (9, 0))


def test_split_pieces_keep_every_piece_of_a_step_resident():
    assert designs.split_pieces(1, 264) == 264
    assert designs.split_pieces(2, 264) == 132
    assert designs.split_pieces(300, 264) == 1
    for rows in (1, 2, 3, 7, 100, 264, 1000):
        pieces = designs.split_pieces(rows, 264)
        assert pieces * min(rows, 264 // pieces) <= 264


def test_module_labels_name_every_define():
    plan = fusion.fused_plan(128, 131072, H200)
    assert plan["module"] == "softmax_designs_cluster_block256_cluster16_design2_slice_regs8_unroll4"
    assert fusion.fused_plan(4096, 512, H200)["module"] == "softmax_designs_narrow_block256_design1_lanes32_row_chunks4"
    assert designs.module_label("split", designs.split_config(1, 1, SMS)) == "softmax_designs_split_block512_design3_unroll4"


def test_design_defines_take_overrides():
    assert designs.design_defines("narrow", 77, 61, SMS, lanes=4) == {"BLOCK": 128, "DESIGN": 1, "LANES": 4,
                                                                      "ROW_CHUNKS": 4}
    assert designs.design_defines("narrow", 300_000, 33, SMS, lanes=4, block=32)["BLOCK"] == 32
    assert designs.design_defines("cluster", 3, 4099, SMS, cluster=2) == {
        "BLOCK": 256, "CLUSTER": 2, "DESIGN": 2, "SLICE_REGS": 4, "UNROLL": 4}
    assert designs.design_defines("cluster", 3, 4099, SMS, cluster=2, slice_regs=0)["SLICE_REGS"] == 0
    assert designs.design_defines("cluster", 5, 8001, SMS, cluster=4, slice_regs=2)["SLICE_REGS"] == 2
    assert designs.design_defines("cluster", 3, 30001, SMS, cluster=8, block=128) == {
        "BLOCK": 128, "CLUSTER": 8, "DESIGN": 2, "SLICE_REGS": 8, "UNROLL": 4}
    assert designs.design_defines("split", 1, 1, SMS, block=256)["BLOCK"] == 256
    with pytest.raises(ValueError, match="unknown design"):
        designs.design_defines("nowhere", 1, 1, SMS)
    with pytest.raises(ValueError):
        designs.design_defines("row", 1, 1, SMS)  # the row kernel is kernels/fused_softmax.cu, not this module


def test_sanitizer_cases_cover_every_design_and_place():
    """The compute-sanitizer child runs each design where it keeps a row differently."""
    places = set()
    for label, design, rows, cols, choices in sanitize.CASES:
        if design == "row":
            config = fusion.fused_config(rows, cols, H200["shared_bytes_per_block_optin"], SMS)
            wide = config["block"] > 32 and config["defines"]["REG_CHUNKS"] == fusion.FEW_ROWS_REG_CHUNKS
            places.add(("row", config["tier"] + (", few rows" if wide else "")))
        elif design == "cluster":
            d = designs.design_defines(design, rows, cols, SMS, **choices)
            places.add(("cluster", "registers" if d["SLICE_REGS"] else "shared"))
        else:
            places.add((design, None))
    assert places == {("narrow", None), ("row", "registers"), ("row", "registers, few rows"), ("row", "shared"),
                      ("row", "streamed"),
                      ("cluster", "registers"), ("cluster", "shared"), ("split", None)}


# ---------------------------------------------------------------- the policy below compute capability 9.0
A100 = {"sm_count": 108, "compute_capability": "8.0", "shared_bytes_per_block_optin": 166912}
L40S = {"sm_count": 142, "compute_capability": "8.9", "shared_bytes_per_block_optin": 101376}
B200 = {"sm_count": 148, "compute_capability": "10.0", "shared_bytes_per_block_optin": 232448}


@pytest.mark.parametrize("gpu", [A100, L40S], ids=["sm_80", "sm_89"])
def test_without_clusters_the_cluster_shapes_go_to_the_split_design(gpu):
    """Below 9.0 every shape the preferred policy gives a cluster runs the split design, with the reason in its
    plan; every other shape keeps its design (and no fallback note)."""
    sms = gpu["sm_count"]
    clustered = [(rows, cols) for rows, cols in SHAPES if designs.preferred_design(rows, cols, sms) == "cluster"]
    assert clustered  # the sweep's 128-row series reaches the cluster shapes on these SM counts too
    for rows, cols in SHAPES:
        preferred = designs.preferred_design(rows, cols, sms)
        plan = fusion.fused_plan(rows, cols, gpu)
        if preferred == "cluster":
            assert plan["design"] == "split" and plan["defines"] == designs.split_config(rows, cols, sms)
            assert plan["fallback"] == (f"cluster needs thread-block clusters (compute capability 9.0); this GPU "
                                        f"has {gpu['compute_capability']}: split instead")
        else:
            assert plan["design"] == preferred and "fallback" not in plan, (rows, cols, plan)


@pytest.mark.parametrize("gpu", [H200, B200], ids=["sm_90", "sm_100"])
def test_with_clusters_the_preferred_design_runs(gpu):
    for rows, cols in SHAPES:
        plan = fusion.fused_plan(rows, cols, gpu)
        assert plan["design"] == designs.preferred_design(rows, cols, gpu["sm_count"]) and "fallback" not in plan


def test_capability_reads_text_and_pairs():
    assert designs.capability("9.0") == designs.capability((9, 0)) == (9, 0)
    assert designs.capability("10.0") > designs.capability("9.0") > designs.capability("8.9")
    assert design_of(1, designs.CLUSTER_MIN_COLS, capability="8.6") == "split"
    assert design_of(1, designs.CLUSTER_MIN_COLS, capability="12.0") == "cluster"
