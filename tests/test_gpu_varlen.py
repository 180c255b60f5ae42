"""GPU: the one-launch varlen design (kernels/varlen_softmax.cu) against the float64 oracle on fresh seeds, on
every tiled case and irregular rows, from the stream and as a graph replay, back to back; forced plans reach
every tier (register pieces, streamed pieces, packed rows, one block of many pieces); poisoned outputs fail; a
plan beyond one wave is refused before launch; a wait that runs out leaves its error words and no hang; the
counters stay consistent over many invocations."""
import numpy as np
import pytest

from launchlab.model import oracles, workloads
from launchlab.model import varlen_partition as vp

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777, 33, 512, 513, 129]
LENGTH_SETS = {case: list(workloads.tiled_row_lengths(case)) for case in workloads.TILED_CASES}
LENGTH_SETS["irregular"] = IRREGULAR


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()


@pytest.fixture(scope="module")
def built():
    from launchlab.chapters.megakernels import varlen

    return varlen.load()


def check(target, values, invoke, label):
    ref = oracles.rms_softmax_packed(values, target.row_offsets)
    result = oracles.compare(target.compute(values, invoke), ref, oracles.RMS_SOFTMAX_TOLERANCE, target.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}, {label}: {result}"
    target.check_error()
    assert target.counters_consistent(), f"seed {FRESH_SEED}, {label}: counters"


@pytest.mark.parametrize("case", sorted(LENGTH_SETS))
def test_the_chosen_plan_matches_the_oracle_from_stream_and_graph(case, backend, built):
    from launchlab.chapters.megakernels import varlen
    from launchlab.gpu.capture import GraphReplay

    target = varlen.VarlenRows(built, LENGTH_SETS[case])
    replay = GraphReplay(target, backend.stream)
    for index in range(2):
        values = workloads.packed_fixture(FRESH_SEED, index, target.path.lengths)
        check(target, values, None, f"{case} stream {target.describe()}")
        check(target, values, replay.invoke, f"{case} graph")
        for _ in range(5):  # back to back: every invocation a new round of the counters
            replay.invoke()
        check(target, values, replay.invoke, f"{case} graph after repeats")


@pytest.mark.parametrize("threads,target,case", [(256, 1024, "irregular"), (512, 1 << 20, "ragged"),
                                                 (256, 2048, "giant"), (512, 4096, "loguniform")])
def test_forced_plans_reach_every_tier(threads, target, case, backend, built):
    """1 << 20: whole rows longer than the registers (streamed); 1024: many pieces; giant: packed rows."""
    from launchlab.chapters.megakernels import varlen

    lengths = LENGTH_SETS[case]
    probe = varlen.VarlenRows(built, lengths)
    plan = vp.plan_for(lengths, threads, target, probe.capacity_by_threads[threads], probe.layout.sms)
    forced = varlen.VarlenRows(built, probe.path, plan=plan)
    check(forced, workloads.packed_fixture(FRESH_SEED, 2, lengths), None, f"{case} {plan.describe()}")


def test_poison_shows_when_nothing_runs(built):
    from launchlab.chapters.megakernels import varlen

    target = varlen.VarlenRows(built, IRREGULAR)
    values = workloads.packed_fixture(FRESH_SEED, 0, target.path.lengths)
    target.load(values)
    target.poison()
    result = oracles.compare(target.output(), oracles.rms_softmax_packed(values, target.row_offsets),
                             oracles.RMS_SOFTMAX_TOLERANCE, target.row_offsets)
    assert not result["passed"] and result["non_finite_elements"] == values.size


def test_a_plan_beyond_one_wave_is_refused_before_launch(built):
    from launchlab.chapters.megakernels import varlen
    from launchlab.chapters.megakernels.persistent import NotCoResident

    probe = varlen.VarlenRows(built, [4096] * 8)
    lengths = [4096] * (probe.capacity_by_threads[512] + 1)
    plan = vp.plan_for(lengths, 512, 4096, 10**6, probe.layout.sms)
    with pytest.raises(NotCoResident, match="co-resident"):
        varlen.VarlenRows(built, lengths, plan=plan)


def test_a_wait_that_runs_out_leaves_error_words(backend, built):
    """A plan with one piece of a split row left out: the row's other pieces wait for it until their bound (1 ms
    here) runs out, leave the error words and write nothing; the rows that need no wait are still right."""
    import dataclasses

    from launchlab.chapters.megakernels import varlen

    lengths = [65536, 100, 4096]
    probe = varlen.VarlenRows(built, lengths)
    plan = vp.plan_for(lengths, 256, 1024, probe.capacity_by_threads[256], probe.layout.sms)
    missing = np.flatnonzero((plan.blocks[:, 0] == 0) & (plan.blocks[:, 3] == 5))
    broken = dataclasses.replace(plan, blocks=np.delete(plan.blocks, missing, axis=0))
    target = varlen.VarlenRows(built, probe.path, plan=broken, wait_limit_ns=1_000_000)
    values = workloads.packed_fixture(FRESH_SEED, 0, target.path.lengths)
    out = target.compute(values)
    with pytest.raises(varlen.VarlenError, match="ran out"):
        target.check_error()
    assert np.isnan(out[:65536]).all()  # every piece of the row gave up (and one never ran)
    reference = oracles.rms_softmax_packed(values, target.row_offsets)
    assert np.allclose(out[65536:65636], reference[65536:65636], rtol=1e-4, atol=1e-6)  # the packed row ran
    assert not target.counters_consistent()
    target.reset()
    assert target.words()[0].tolist() == [0, 0, 0, 0, 1]


def test_a_reset_never_lets_a_piece_read_an_earlier_invocations_partials(backend, built):
    """After reset() the stamps start again at 1: slots written before it must not pass for this invocation's.
    Two fixtures, a reset between them, the second checked."""
    from launchlab.chapters.megakernels import varlen

    target = varlen.VarlenRows(built, LENGTH_SETS["ragged"])
    first = workloads.packed_fixture(FRESH_SEED, 0, target.path.lengths)
    second = workloads.packed_fixture(FRESH_SEED + 1, 0, target.path.lengths)
    target.reset()
    target.load(first)
    target.invoke()
    target.reset()
    target.load(second)
    target.path.y.fill(np.nan)  # no poison() here: it would clear the slots itself
    target.invoke()
    reference = oracles.rms_softmax_packed(second, target.row_offsets)
    result = oracles.compare(target.output(), reference, oracles.RMS_SOFTMAX_TOLERANCE, target.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}: {result}"
