"""The latency regime's candidates (chapters/fusion/plans.py): a small matrix's rows of 65-512 chunks also get the
registers tier with 2 chunks a thread and the fewest threads that hold them; its narrow build of fewest chunks a lane
also comes in blocks of 128 threads; only 4-chunk narrow builds prefetch. Large matrices keep the old list."""
import numpy as np
import pytest

from launchlab.chapters.fusion import plans
from launchlab.model import fused_policy

H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448}


def random_shapes(seed: int, count: int = 200) -> list[tuple[int, int]]:
    """Rows log-uniform in 1-65536, row lengths log-uniform in 1-32768 floats."""
    rng = np.random.default_rng(seed)
    return [(int(np.exp(rng.uniform(0, np.log(65536)))), int(np.exp(rng.uniform(0, np.log(1 << 15)))))
            for _ in range(count)]


def tags(rows, cols):
    return [plan["tag"] for plan in plans.candidates(rows, cols, H200)]


@pytest.mark.parametrize("rows, cols, block", [(11, 375, 64), (119, 368, 64), (3, 750, 128), (1, 1073, 256),
                                               (8, 1496, 256), (2, 2045, 256), (1, 257, 64)])
def test_small_matrices_get_a_row_build_of_two_chunks_a_thread(rows, cols, block):
    (plan,) = plans.latency_row_variants(rows, cols)
    chunks = fused_policy.worst_chunks(rows, cols)
    assert plan["defines"]["REG_CHUNKS"] == plans.LATENCY_ROW_CHUNKS == 2
    assert plan["block"] == plan["defines"]["BLOCK"] == block
    assert block // 2 < -(-chunks // 2) <= block            # the fewest power-of-two threads that hold the row
    assert plan["tier"] == "registers" and plan["shared_bytes"] == 0
    assert plan["tag"] in tags(rows, cols)


@pytest.mark.parametrize("rows, cols", [(14, 147), (1, 256), (1, 2049), (2, 2046), (4, 2826), (4097, 512),
                                        (2049, 1024)])
def test_no_latency_row_build_for_short_or_long_rows_or_large_matrices(rows, cols):
    """Rows of up to 64 chunks: one warp already holds them in 2 chunks a thread; beyond 512 chunks the registers
    tier's own block is 256 threads; a matrix over 8 MiB is not latency-bound."""
    assert plans.latency_row_variants(rows, cols) == []


def test_small_matrices_also_get_a_narrow_build_in_blocks_of_128_threads():
    assert "narrow-b128-r1" in tags(201, 6) and "narrow-b256-r1" in tags(201, 6)
    assert "narrow-b128-r2" in tags(14, 147)                # the fewest chunks a lane among the narrow builds
    assert not [t for t in tags(1 << 20, 3) if "-b128-" in t and not t.endswith("-s1")]  # 12 MiB: bandwidth-bound


def test_only_four_chunk_narrow_builds_prefetch_and_the_list_stays_small():
    for shape in [(201, 6), (14, 147), (2017, 83), (61999, 3), (11, 375), (1, 1), (4841, 14)]:
        found = tags(*shape)
        assert all(t.startswith("narrow-b256-r4") for t in found if t.endswith("-p1")), (shape, found)
        assert len(found) <= 15, (shape, found)  # 12, and the registers-only row builds of 1, 2 and 4 chunks a thread
        assert len(found) == len(set(found))


def test_scalar_narrow_builds_are_candidates_for_rows_of_up_to_256_floats_only():
    """One scalar build per lane count (the fewest floats a lane that give it), in blocks of 128 threads, wherever
    32 lanes of 8 floats hold the row; none beyond."""
    for rows, cols in [(201, 6), (14, 147), (61999, 3), (3, 256), (1, 1)]:
        scalar = [t for t in tags(rows, cols) if t.endswith("-s1")]
        assert scalar and all(t.startswith("narrow-b128-r") for t in scalar), (rows, cols, scalar)
        lanes = {fused_policy.narrow_lanes(rows, cols, int(t.split("-r")[1].split("-")[0]), scalar=True)
                 for t in scalar}
        assert len(lanes) == len(scalar), (rows, cols, scalar)
    assert not [t for t in tags(3, 257) if t.endswith("-s1")]


def test_spread_row_builds_are_timed_by_the_calibration_and_not_yet_offered():
    """plans.spread_row_variants on seeded random shapes: the registers tier with 1, 2 or 4 chunks a thread and the
    fewest power-of-two threads (64-1024) that hold the worst-aligned row; the calibration's candidates include
    them, the policy's are a part of those."""
    for rows, cols in random_shapes(20261204):
        chunks = fused_policy.worst_chunks(rows, cols)
        spread = plans.spread_row_variants(rows, cols)
        for plan in spread:
            d = plan["defines"]
            assert 64 <= plan["block"] == d["BLOCK"] <= plans.SPREAD_ROW_MAX_BLOCK
            assert d["REG_CHUNKS"] in plans.SPREAD_ROW_CHUNKS
            assert d["BLOCK"] // 2 < -(-chunks // d["REG_CHUNKS"]) <= d["BLOCK"]
            assert plan["tier"] == "registers" and plan["shared_bytes"] == 0
        expected = {c for c in plans.SPREAD_ROW_CHUNKS if 64 * c // 2 < chunks <= plans.SPREAD_ROW_MAX_BLOCK * c}
        assert {p["defines"]["REG_CHUNKS"] for p in spread} == expected, (rows, cols)
        offered = {p["tag"] + p["module"] for p in plans.candidates(rows, cols, H200)}
        calibrated = {p["tag"] + p["module"] for p in plans.candidates(rows, cols, H200, every_build=True)}
        assert offered <= calibrated and {p["tag"] + p["module"] for p in spread} <= calibrated


def test_thin_cluster_builds_are_timed_by_the_calibration_and_not_yet_offered():
    """Cluster builds of 1, 2 or 4 chunks a thread (plans.SPREAD_SLICE_REGS): at seeded random shapes, the
    calibration's candidates add, per cluster width, at most the one of fewest chunks that keeps the slice in
    registers; the policy's candidates never hold one."""
    rng = np.random.default_rng(4851)
    seen = 0
    for _ in range(300):
        rows = int(np.exp(rng.uniform(0, np.log(64))))
        cols = int(np.exp(rng.uniform(np.log(1024), np.log(1 << 17))))
        chunks = fused_policy.worst_chunks(rows, cols)
        offered = plans.candidates(rows, cols, H200)
        assert not [p for p in offered if p["design"] == "cluster"
                    and p["defines"]["SLICE_REGS"] in plans.SPREAD_SLICE_REGS], (rows, cols)
        thin = [p for p in plans.candidates(rows, cols, H200, every_build=True) if p["design"] == "cluster"
                and p["defines"]["SLICE_REGS"] in plans.SPREAD_SLICE_REGS]
        widths = [p["defines"]["CLUSTER"] for p in thin]
        assert len(widths) == len(set(widths)), (rows, cols, widths)
        for plan in thin:
            regs, slice_chunks = plan["defines"]["SLICE_REGS"], -(-chunks // plan["defines"]["CLUSTER"])
            assert (regs // 2) * 256 < slice_chunks <= regs * 256, (rows, cols, plan["tag"])
        seen += len(thin)
    assert seen  # the draw reaches slices of 1024 chunks and fewer


def test_registers_only_row_builds_ask_for_the_whole_sm_and_are_offered():
    """plans.registers_only_variants on seeded random shapes: the registers tier alone with 1, 2 or 4 chunks a
    thread and the fewest power-of-two threads (32-1024) that hold the row, bound to the SM's 2048 threads (at most
    32 blocks); the policy's candidates hold them, and the model counts their blocks an SM by that bound."""
    from launchlab.model import fused_cost

    for rows, cols in random_shapes(2333):
        chunks = fused_policy.worst_chunks(rows, cols)
        found = plans.registers_only_variants(rows, cols)
        for plan in found:
            d = plan["defines"]
            assert plan["family"] == plans.REGISTERS_FAMILY and plans.plan_kernels(plan) == plans.REGISTERS_KERNELS
            assert 32 <= d["BLOCK"] <= plans.SPREAD_ROW_MAX_BLOCK and d["REG_CHUNKS"] in plans.SPREAD_ROW_CHUNKS
            assert d["BLOCK"] == 32 or d["BLOCK"] // 2 < -(-chunks // d["REG_CHUNKS"])
            assert chunks <= d["REG_CHUNKS"] * d["BLOCK"]
            assert d["REGISTERS_MIN_BLOCKS"] * d["BLOCK"] == min(2048, 32 * d["BLOCK"])
            geometry = fused_cost.geometry(plan, rows, cols, H200)
            assert geometry.slots == H200["sm_count"] * d["REGISTERS_MIN_BLOCKS"], (rows, cols, plan["tag"])
        tags = {p["tag"] for p in found}
        assert tags <= {p["tag"] for p in plans.candidates(rows, cols, H200)}


def test_full_occupancy_narrow_twins_are_timed_by_the_calibration_and_not_yet_offered():
    """plans.narrow_full_twin on random shapes: every offered narrow build of 1 or 2 chunks a lane (not scalar, no
    prefetch) has one twin among the calibration's candidates, the same block and chunks bound to the SM's 2048
    threads in kernels/narrow_full.cu (built without DESIGN); the model counts 2048 threads an SM for it; the policy's
    candidates never hold one."""
    from launchlab.model import fused_cost

    seen = 0
    for rows, cols in random_shapes(int(np.random.SeedSequence().entropy % 2**31)):
        offered = plans.candidates(rows, cols, H200)
        everything = plans.candidates(rows, cols, H200, every_build=True)
        twins = [p for p in everything if p["family"] == plans.NARROW_FULL_FAMILY]
        assert not [p for p in offered if p["family"] == plans.NARROW_FULL_FAMILY], (rows, cols)
        expected = [plans.narrow_full_twin(p) for p in offered if plans.narrow_full_twin(p)]
        assert [p["tag"] for p in twins] == [p["tag"] for p in expected], (rows, cols)
        for twin in twins:
            d = twin["defines"]
            assert "DESIGN" not in d and d["ROW_CHUNKS"] in plans.NARROW_FULL_ROW_CHUNKS
            assert d["NARROW_MIN_BLOCKS"] * d["BLOCK"] == 2048 and twin["tag"].endswith(f"-m{d['NARROW_MIN_BLOCKS']}")
            blocks_of_warps = fused_cost.geometry(twin, rows, cols, H200).slots / H200["sm_count"]
            assert blocks_of_warps == 2048 // 32, (rows, cols, twin["tag"])  # warps an SM, each a group of rows
        seen += len(twins)
    assert seen
