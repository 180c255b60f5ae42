"""CPU: the one-launch varlen design's partition rule (model/varlen_partition.py) and its new cases.

A plan covers every element exactly once, splits long rows into equal-work pieces on aligned boundaries, packs
only short rows (one warp each), fits one wave of co-resident blocks or is refused, and its blocks run in order
of decreasing work. A NumPy execution of a plan (each block's partial, the row's merge, the output) equals the
float64 oracle: the descriptors mean what the kernel reads them as. The kernel's source agrees with the module's
constants."""
import re

import numpy as np
import pytest

from launchlab.gpu import build
from launchlab.model import oracles, workloads
from launchlab.model import varlen_partition as vp

H200_SMS = 132
H200_SLOTS = {256: 4 * H200_SMS, 512: 2 * H200_SMS}  # the occupancy API's blocks at <= 64 registers per thread
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777, 33, 512, 513]
CASES = {case: workloads.tiled_row_lengths(case) for case in workloads.TILED_CASES} | {"irregular": np.array(IRREGULAR)}


def coverage(plan) -> np.ndarray:
    """How many blocks touch each element."""
    lengths = plan.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    count = np.zeros(int(offsets[-1]), dtype=np.int64)
    for row, start, length, j in plan.blocks:
        if j >= 0:
            count[start:start + length] += 1
        else:
            for r in plan.pack_rows[row:row + start]:
                count[offsets[r]:offsets[r + 1]] += 1
    return count


def execute(plan, values: np.ndarray) -> np.ndarray:
    """The kernel's arithmetic in float64 over the plan: partials per block, merged per row, then y."""
    lengths = plan.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    y = np.full(values.shape, np.nan)
    partials = {}
    for row, start, length, j in plan.blocks:
        if j >= 0:
            v = values[start:start + length].astype(np.float64)
            partials.setdefault(row, []).append((start, length, (v * v).sum(), v.max(), np.exp(v - v.max()).sum()))
        else:
            for r in plan.pack_rows[row:row + start]:
                v = values[offsets[r]:offsets[r + 1]].astype(np.float64)
                partials.setdefault(r, []).append((offsets[r], lengths[r], (v * v).sum(), v.max(),
                                                   np.exp(v - v.max()).sum()))
    for r, parts in partials.items():
        assert len(parts) == plan.pieces_per_row[r] or plan.pieces_per_row[r] == 1
        m = max(p[3] for p in parts)
        z = sum(p[4] * np.exp(p[3] - m) for p in parts)
        rho = np.sqrt(sum(p[2] for p in parts) / lengths[r])
        for start, length, *_ in parts:
            y[start:start + length] = rho * np.exp(values[start:start + length].astype(np.float64) - m) / z
    return y


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_chosen_plan_covers_every_element_once_in_one_wave(case):
    lengths = CASES[case]
    plan = vp.choose(lengths, H200_SLOTS, H200_SMS)
    assert plan.waves == 1 and plan.grid <= H200_SLOTS[plan.threads]
    assert (coverage(plan) == 1).all()
    work = plan.work()
    assert (np.diff(work) <= 0).all(), "blocks launch largest work first"
    packed = plan.blocks[:, 3] < 0
    assert (plan.blocks[packed, 1] <= plan.threads // 32).all()
    assert (lengths[plan.pack_rows] <= vp.PACK_LONGEST).all()
    assert plan.pieces_per_row.sum() == plan.row_first_slot[-1] and len(plan.row_first_slot) == len(lengths) + 1


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("threads", vp.BLOCK_SIZES)
def test_every_plan_tried_splits_rows_into_equal_aligned_pieces(case, threads):
    lengths = CASES[case]
    slots = H200_SLOTS[threads]
    tried = 0
    for target in vp.piece_targets(lengths, threads, slots, H200_SMS):
        try:
            plan = vp.plan_for(lengths, threads, target, slots, H200_SMS)
        except ValueError as refused:
            assert "co-resident" in str(refused)
            continue
        tried += 1
        assert (coverage(plan) == 1).all()
        pieces = plan.blocks[plan.blocks[:, 3] >= 0]
        for r in np.flatnonzero(plan.pieces_per_row > 1):
            mine = pieces[pieces[:, 0] == r]
            assert sorted(mine[:, 3]) == list(range(plan.pieces_per_row[r]))
            assert np.ptp(mine[:, 2]) <= 2 * vp.ALIGN, "equal work: each boundary within ALIGN / 2 of its share"
            assert vp.span(mine[:, 1], mine[:, 2]).max() <= max(target, vp.ALIGN), "every piece fits the target"
            starts = np.sort(mine[:, 1])[1:]
            assert (starts % vp.ALIGN == 0).all(), "interior boundaries on aligned addresses"
    assert tried > 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_executing_the_plan_gives_the_oracle(case):
    lengths = CASES[case]
    values = workloads.packed_fixture(11, 0, lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for plan in (vp.choose(lengths, H200_SLOTS, H200_SMS), vp.plan_for(lengths, 256, 1024, 10**6, H200_SMS)):
        result = oracles.compare(execute(plan, values), oracles.rms_softmax_packed(values, offsets),
                                 oracles.RMS_SOFTMAX_TOLERANCE, offsets)
        assert result["passed"], result


def test_long_rows_are_split_and_short_rows_packed_where_that_pays():
    ragged = vp.choose(CASES["ragged"], H200_SLOTS, H200_SMS)
    assert (ragged.pieces_per_row[CASES["ragged"] == 36864] > 1).all()
    giant = vp.choose(CASES["giant"], H200_SLOTS, H200_SMS)
    assert giant.pieces_per_row[workloads.GIANT_POSITION] >= H200_SMS // 4
    assert giant.describe()["packed_rows"] == workloads.GIANT_SHORT_ROWS
    one_block = vp.plan_for(CASES["giant"], 512, workloads.GIANT_ROW, H200_SLOTS[512], H200_SMS)
    assert giant.predicted_us < one_block.predicted_us


def test_a_plan_beyond_one_wave_is_refused():
    with pytest.raises(ValueError, match="co-resident"):
        vp.plan_for([4096] * 300, 512, 4096, 264, 132)
    with pytest.raises(ValueError, match="no varlen plan fits one wave"):
        vp.choose([100_000] * 600, {256: 528, 512: 264}, 132)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one element"):
        vp.plan_for([5, 0, 3], 256, 1024, 528, 132)
    with pytest.raises(ValueError, match="threads must be one of"):
        vp.plan_for([5, 3], 128, 1024, 528, 132)
    with pytest.raises(ValueError, match="cannot cut"):
        vp.split_points(0, 3, 4)


def test_split_points_are_equal_and_aligned():
    points = vp.split_points(96, 36864, 9)
    assert points[0] == 96 and points[-1] == 96 + 36864
    assert (points[1:-1] % vp.ALIGN == 0).all() and np.ptp(np.diff(points)) <= vp.ALIGN
    tiny = vp.split_points(5, 40, 4)  # shorter than the alignment: equal unaligned shares
    assert list(np.diff(tiny)) == [10, 10, 10, 10]


def test_the_cost_model_charges_the_busiest_sm_and_the_handoff():
    cost = vp.PieceCost()
    even = cost.time(vp.cost_terms(np.full(132, 8192), 1, 1, 132))
    doubled = cost.time(vp.cost_terms(np.concatenate([np.full(132, 8192), [8192]]), 2, 1, 132))
    split = cost.time(vp.cost_terms(np.full(132, 8192), 1, 4, 132))
    assert doubled > even and split == pytest.approx(even + cost.handoff_us + 4 * cost.handoff_per_piece_us)


def test_the_new_cases_are_fixed():
    loguniform = workloads.tiled_row_lengths("loguniform")
    assert len(loguniform) == 128 and loguniform.min() >= 1 and loguniform.max() <= 65536
    assert np.array_equal(loguniform, workloads.tiled_row_lengths("loguniform"))
    assert np.log(loguniform).max() - np.log(loguniform).min() > 0.75 * np.log(65536)  # spans the range
    giant = workloads.tiled_row_lengths("giant")
    assert len(giant) == 201 and giant.max() == 262_144 and (np.sort(giant)[:-1] == 33).all()
    assert 0 < int(np.argmax(giant)) < len(giant) - 1


def test_the_kernel_source_agrees_with_the_partition_module():
    source = (build.KERNEL_DIR / "varlen_softmax.cu").read_text()
    assert re.search(r"#define REG_CHUNKS (\d+)", source).group(1) == str(vp.REG_CHUNKS)
    for threads in vp.BLOCK_SIZES:
        assert re.search(rf"__launch_bounds__\({threads}, [^)]*\) varlen_rows_{threads}\(", source)


def test_fit_cost_recovers_the_model_that_made_the_times():
    truth = vp.PieceCost(launch_us=2.5, block_us=0.3, handoff_us=0.8, handoff_per_piece_us=0.01, device_gbs=6000.0,
                         sm_gbs=100.0)
    plans = [vp.plan_for(CASES[case], threads, target, H200_SLOTS[threads], H200_SMS, truth)
             for case in ("balanced", "ragged", "giant", "loguniform") for threads in vp.BLOCK_SIZES
             for target in vp.piece_targets(CASES[case], threads, H200_SLOTS[threads], H200_SMS)
             if len(vp.plan_for(CASES[case], threads, target, 10**6, H200_SMS).blocks) <= H200_SLOTS[threads]]
    fitted, residual = vp.fit_cost(plans, [p.predicted_us for p in plans])
    assert residual < 1e-6
    assert fitted.sm_gbs == truth.sm_gbs and fitted.launch_us == pytest.approx(truth.launch_us)
    assert fitted.handoff_us == pytest.approx(truth.handoff_us)
    with pytest.raises(ValueError, match="one measured time per plan"):
        vp.fit_cost(plans, [1.0])


@pytest.mark.parametrize("case", sorted(CASES))
def test_descriptors_hold_what_each_block_needs_before_it_loads(case):
    plan = vp.choose(CASES[case], H200_SLOTS, H200_SMS)
    d = plan.descriptors()
    assert d.shape == (plan.grid, 8) and d.dtype == np.int32
    piece = d[:, 3] >= 0
    assert (d[piece, 4] == plan.pieces_per_row[d[piece, 0]]).all() and (d[piece, 3] < d[piece, 4]).all()
    assert (d[piece, 6] == plan.lengths[d[piece, 0]]).all()
    slots = d[piece, 5] + d[piece, 3]  # every piece its own partial slot
    assert len(np.unique(slots)) == piece.sum() and slots.max() < plan.row_first_slot[-1]
    assert (d[~piece, 2:] == [0, -1, 0, 0, 0, 0]).all()


def test_streamed_pieces_only_where_nothing_else_fits():
    ragged = CASES["ragged"]
    for plan in (vp.choose(ragged, H200_SLOTS, H200_SMS), vp.choose(CASES["loguniform"], H200_SLOTS, H200_SMS)):
        assert not plan.terms()["streamed"]
    crowded = vp.choose([60_000] * 40, {256: 60, 512: 30}, 30)  # 40 rows of 60,000 on 60 or 30 slots
    assert crowded.terms()["streamed"] and crowded.grid <= 60


def test_the_default_cost_is_the_fit_of_the_committed_measurements():
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import fit_varlen_cost

    source = vp.PieceCost.__doc__.split("evidence/development/")[1].split(" ")[0]
    results = json.loads((Path(__file__).resolve().parents[1] / "evidence" / "development" / source).read_text())
    fitted, _, rows = fit_varlen_cost.fit(results)
    assert len(rows) >= 20
    default = vp.PieceCost()
    for field in ("launch_us", "block_us", "handoff_us", "wide_handoff_us", "streamed_us", "device_gbs", "sm_gbs"):
        assert getattr(default, field) == pytest.approx(getattr(fitted, field), abs=6e-4), field
    assert default.handoff_per_piece_us == pytest.approx(fitted.handoff_per_piece_us, abs=6e-5)
