"""The long-row designs' launch choices (model/fused_policy.py's split rules) and what the kernels assume of them
(kernels/grid_flags.cuh, kernels/softmax_designs.cu); on a GPU, the split design's epoch-stamped exchange across
grid steps, repeated calls, graph replays and both launch kinds."""
import re
from pathlib import Path

import numpy as np
import pytest

from launchlab.model import fused_policy as policy

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
SMS = 132
SHARED_PER_SM = 233472  # an H200 SM's shared memory
SHAPES = [(r, c) for r in (1, 2, 5, 17, 60, 131, 132, 133, 264, 390, 1000, 4097) for c in (4096, 20001, 78869, 171713,
                                                                                        582769, 1546367, 1 << 21)
          if 4 * r * c <= 256 << 20]


def define_default(path: Path, name: str) -> str:
    """The text a kernel file's `#define NAME ...` gives (its default under #ifndef)."""
    found = re.search(rf"^#define {name} (.+?)(?:\s+//.*)?$", path.read_text(), re.MULTILINE)
    assert found, f"{path.name} defines no {name}"
    return found.group(1).strip()


def test_the_kernels_defaults_are_the_policys():
    assert int(define_default(KERNELS / "grid_flags.cuh", "SLOT_WORDS")) == policy.SLOT_WORDS
    assert int(define_default(KERNELS / "softmax_designs.cu", "SPLIT_REGS")) == policy.SPLIT_REGS
    # __launch_bounds__ asks for 1024 threads an SM, which is what split_blocks_per_sm counts on
    assert define_default(KERNELS / "softmax_designs.cu", "SPLIT_MIN_BLOCKS").startswith("(BLOCK < 1024 ? 1024 / BLOCK")
    for block in (256, 512, 1024):
        assert policy.split_blocks_per_sm(block) * block == 1024


@pytest.mark.parametrize("block", [256, 512, 1024])
def test_a_split_sms_slices_fit_its_shared_memory(block):
    per_sm = policy.split_blocks_per_sm(block)
    static = 512  # the kernel's reduction scratch (ptxas: 400 bytes)
    assert per_sm * (policy.split_slice_bytes(block) + policy.SHARED_RESERVED_PER_BLOCK + static) <= SHARED_PER_SM


@pytest.mark.parametrize("block", [256, 512])
@pytest.mark.parametrize("shape", SHAPES)
def test_split_pieces_keep_a_step_resident_and_rows_on_chip_where_they_can(shape, block):
    rows, cols = shape
    capacity = policy.split_blocks_per_sm(block) * SMS
    chunks, on_chip = policy.worst_chunks(rows, cols), policy.split_on_chip_chunks(block)
    pieces = policy.split_pieces(rows, capacity, chunks, on_chip, SMS)
    assert 1 <= pieces <= capacity
    assert pieces * min(rows, capacity // pieces) <= capacity  # a grid step is resident at once
    if -(-chunks // on_chip) <= capacity:
        assert -(-chunks // pieces) <= on_chip  # x read once
    else:
        assert pieces == capacity               # as many pieces as can wait for each other; the rest streamed


def test_small_matrices_spread_over_one_block_an_sm_and_large_ones_over_every_resident_block():
    capacity, on_chip = 4 * SMS, policy.split_on_chip_chunks(256)
    small = (1, policy.SPLIT_SMALL_BYTES // 16 - 1)  # (rows, chunks): x just under the bound
    large = (3, policy.SPLIT_SMALL_BYTES // 16)
    assert policy.split_pieces(small[0], capacity, small[1], on_chip, SMS) == SMS
    assert policy.split_pieces(large[0], capacity, large[1], on_chip, SMS) == capacity // large[0]
    assert policy.split_pieces(large[0], capacity) == capacity // large[0]  # without the row: the spread alone


def test_where_rows_outnumber_the_grid_the_pieces_are_those_of_least_estimated_time():
    rows, capacity, on_chip = 380, 2 * SMS, policy.split_on_chip_chunks(512)
    chunks = policy.worst_chunks(rows, 78869)
    pieces = policy.split_pieces(rows, capacity, chunks, on_chip, SMS)
    needed = -(-chunks // on_chip)
    times = {p: policy.split_steps_us(rows, chunks, p, capacity) for p in range(needed, 4 * needed + 1)}
    assert pieces > 1 and times[pieces] == min(times.values())


def test_blocks_of_256_unroll_deeper_only_where_bandwidth_sets_the_time():
    big_rows = policy.SPLIT_SMALL_BYTES // 4 // 100_000 + 1
    assert policy.split_config(big_rows, 100_000, SMS, 256)["UNROLL"] == policy.SPLIT_WIDE_UNROLL
    assert policy.split_config(1, 100_000, SMS, 256)["UNROLL"] == policy.SPLIT_UNROLL
    assert policy.split_config(big_rows, 100_000, SMS, 512)["UNROLL"] == policy.SPLIT_UNROLL
    assert policy.split_config(1, 1, SMS) == {"BLOCK": policy.SPLIT_BLOCK, "DESIGN": 3, "UNROLL": policy.SPLIT_UNROLL}


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("block, rows, cols, options", [
    (256, 301, 9001, {"pieces": 3}),                     # 3 pieces, 176 rows a step: two steps
    (512, 2, 50001, {"pieces": 2, "slice_bytes": 1024}),  # streamed pieces
    (512, 1, 20001, {"cooperative": True}),             # the cooperative launch
    (256, 7, 4099, {}),                                 # the policy's pieces, most of them empty
])
def test_split_stays_exact_over_repeated_calls_and_graph_replays(block, rows, cols, options):
    import cupy

    from launchlab.gpu import build
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.fused_designs import SplitRow
    from launchlab.model import oracles, workloads

    backend = CupyBackend()
    seed = int(np.random.SeedSequence().entropy % 2**31)
    built = build.load_module(policy.FAMILY, policy.split_config(rows, cols, SMS, block))
    for mode, oracle, tolerance in (("plain", oracles.softmax, oracles.SOFTMAX_TOLERANCE),
                                    ("rms", oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE)):
        target = SplitRow(built, rows, cols, mode, **options)
        replay = GraphReplay(target, backend.stream)
        for index in range(3):  # a new input each time: a stale row total would show
            x = workloads.rms_softmax_fixture(seed, index, rows, cols)
            target.load(x)
            reference = oracle(x)
            for invoke in (target.invoke, target.invoke, replay.invoke):
                target.poison()
                invoke()
                backend.stream.synchronize()
                result = oracles.compare(cupy.asnumpy(target.y), reference, tolerance)
                assert result["passed"], f"seed {seed}, {mode} {rows}x{cols} {target.describe()}: {result}"


def test_many_rows_get_a_split_build_only_where_a_block_per_row_would_stream_them():
    from launchlab.chapters.fusion import plans

    def split_blocks(rows, cols, **options):
        return {p["defines"]["BLOCK"] for p in plans.candidates(rows, cols, device, **options) if p["design"] == "split"}

    device = {"sm_count": SMS, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448}
    rng = np.random.default_rng()
    held = device["shared_bytes_per_block_optin"] // 4 - 8  # floats one block's shared memory holds, at worst alignment
    seen = set()
    for k in range(60):  # alternately a row a block holds on chip and one it would stream
        rows = int(rng.integers(2 * SMS, 1000))
        longest = (256 << 20) // (4 * rows)
        cols = int(rng.integers(held + 8, longest)) if k % 2 else int(rng.integers(4096, held))
        streamed = 16 * policy.worst_chunks(rows, cols) > device["shared_bytes_per_block_optin"]
        assert split_blocks(rows, cols) == ({256} if streamed else set()), (rows, cols)
        assert split_blocks(rows, cols, every_build=True) == {256}, (rows, cols)
        seen.add(streamed)
        if not streamed:  # the row kernel keeps the row on chip: a row plan is among the candidates
            assert any(p["design"] == "row" and p["tier"] != "streamed" for p in plans.candidates(rows, cols, device))
    assert seen == {True, False}
    # few rows keep both split builds whatever their length
    assert split_blocks(SMS, 8192) == split_blocks(2 * SMS - 1, 20001) == {256, 512}
