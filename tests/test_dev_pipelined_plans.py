"""The launch plans of the pipelined development probes (tools/dev_pipeline_floor.py, tools/dev_gpipe.py,
tools/dev_lag.py): a plan
the GPU cannot hold at once, or one that gives a row's blocks different grid steps, would hang or corrupt a run on
the device, so the planning is checked here, on seeded random shapes."""
import random
import shutil
import subprocess
import sys

import pytest

from launchlab.model.fused_policy import worst_chunks
from launchlab.store.evidence import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import dev_gpipe  # noqa: E402
import dev_lag  # noqa: E402
import dev_phase_floor  # noqa: E402
import dev_pipeline_floor  # noqa: E402
import dev_probe  # noqa: E402

SMS = (132, 114, 78)  # an H200, an H100 PCIe, a smaller part
SEED = random.SystemRandom().randrange(1 << 30)


def _shapes(count=60):
    rng = random.Random(SEED)
    return [(max(1, int(2 ** rng.uniform(0, 9))), max(1, int(2 ** rng.uniform(10, 21)))) for _ in range(count)]


@pytest.mark.parametrize("sms", SMS)
def test_every_floor_variant_fits_and_its_groups_divide_the_grid(sms):
    for rows, cols in _shapes():
        length = -(-cols // 4)
        for name, per_sm, threads, k, depth, per in dev_pipeline_floor.variants(rows, length, sms):
            grid = per_sm * sms
            assert grid % k == 0, (SEED, rows, cols, name)
            assert per * k >= length, (SEED, rows, cols, name)  # the groups' pieces cover a row
            assert depth * per * 16 <= dev_phase_floor.SHARED_PER_SM // per_sm, (SEED, rows, cols, name)
            assert depth == 1 or grid // k < rows, (SEED, rows, cols, name)  # a group has a row to load ahead
            assert per_sm * threads <= 2048


@pytest.mark.parametrize("sms", SMS)
def test_every_gpipe_variant_puts_a_rows_pieces_in_one_grid_step_and_fits(sms):
    for rows, cols in _shapes():
        chunks = worst_chunks(rows, cols)
        for block, depth, per_sm, pieces, grid, stride, shared in dev_gpipe.variants(rows, cols, sms):
            where = (SEED, rows, cols, block, depth, per_sm, pieces)
            assert grid == per_sm * sms and grid % pieces == 0, where
            assert 1 <= pieces <= chunks and stride * pieces >= chunks, where
            assert dev_gpipe.PIECE_BYTES[0] <= 16 * chunks / pieces <= dev_gpipe.PIECE_BYTES[1], where
            assert grid // pieces <= rows, where  # no block of a step is left without a row
            assert shared == depth * 16 * stride <= dev_probe.SHARED_PER_BLOCK, where
            assert per_sm * (shared + dev_gpipe.STATIC_SHARED) <= dev_probe.SHARED_PER_SM, where
            assert depth == 1 or grid // pieces < rows, where
            assert block * per_sm <= 2048, where


@pytest.mark.parametrize("sms", SMS)
def test_every_lag_variant_puts_a_rows_pieces_in_one_grid_step_and_keeps_its_lag_in_the_l2(sms):
    for rows, cols in _shapes():
        chunks = worst_chunks(rows, cols)
        found = dev_lag.variants(rows, cols, sms)
        for block, per_sm, pieces, grid, lag, lagged in found:
            where = (SEED, rows, cols, block, per_sm, pieces, lag)
            assert (block, per_sm) in dev_lag.LAYOUTS and grid == per_sm * sms and grid % pieces == 0, where
            assert grid // pieces <= rows, where  # no block of a step is left without a row
            assert pieces <= 2 * block, where  # a thread reads at most two of a row's slots early (dev_lag.cu)
            piece = 16 * -(-chunks // pieces)
            assert dev_lag.PIECE_BYTES[0] <= piece <= dev_lag.PIECE_BYTES[1], where
            steps = -(-rows * pieces // grid)
            assert 0 <= lag <= steps and (lag in dev_lag.LAGS or lag == steps), where
            assert lagged == lag * grid * piece and (lag == 0 or lagged <= dev_lag.L2_BUDGET), where
        pieces_of = {}
        for block, _, pieces, *_ in found:
            pieces_of.setdefault(block, set()).add(pieces)
        assert all(len(chosen) <= len(dev_lag.PIECE_TARGETS) for chosen in pieces_of.values())
        assert len(found) == len(set(found))


def test_the_depth_a_row_of_two_million_floats_allows_is_two():
    # a row of 8 MiB over 132 blocks is 62 KiB a block: two buffers fit an SM's shared memory, four do not
    assert {variant[1] for variant in dev_gpipe.variants(3, 1 << 21, 132)} == {1, 2}


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("block", [256, 1024])
def test_the_lag_kernels_compile_without_spilling(tmp_path, block):
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DBLOCK={block}",
                             f"-DUNROLL={dev_lag.UNROLL}", "-Xptxas", "-v", "-o", str(tmp_path / "lag.cubin"),
                             str(REPO_ROOT / "tools" / "dev_lag.cu")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lag_softmax" in result.stderr
    assert " 0 bytes spill stores" in result.stderr and "bytes spill stores" not in result.stderr.replace(
        " 0 bytes spill stores", "")


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("block, depth", [(512, 1), (1024, 4)])
def test_the_gpipe_kernels_compile_without_spilling(tmp_path, block, depth):
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DBLOCK={block}", f"-DDEPTH={depth}",
                             "-Xptxas", "-v", "-o", str(tmp_path / "gpipe.cubin"),
                             str(REPO_ROOT / "tools" / "dev_gpipe.cu")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "gpipe_softmax" in result.stderr
    assert " 0 bytes spill stores" in result.stderr and "bytes spill stores" not in result.stderr.replace(
        " 0 bytes spill stores", "")
