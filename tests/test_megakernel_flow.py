"""Chapter 4 on the CPU: the flow kernel's schedule checks, the hand-off measure, the chain's oracle and
declaration, and the findings computed from them (the GPU side: tests/test_gpu_megakernel_flow.py)."""
import numpy as np
import pytest

from launchlab.chapters import megakernels as declared
from launchlab.chapters.megakernels import chain_model, findings, handoff
from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.chapters.megakernels.schedules import TaskGraph, Trace
from launchlab.model import oracles, workloads
from megakernel_simulation_flow import _b_in_first_c


def test_sm_idle_gaps_count_only_time_an_sm_runs_nothing():
    # SM 0: [0, 10] then [5, 12] overlaps (0), then [20, 25] after 8 idle; SM 1: [0, 2] then [3, 4] after 1
    gaps = handoff.sm_idle_ns([0, 0, 0, 1, 1], [0, 5, 20, 0, 3], [10, 12, 25, 2, 4])
    assert sorted(gaps.tolist()) == [0, 1, 8]
    assert handoff.quantiles([]) == {"p10": 0.0, "p25": 0.0, "median": 0.0, "p75": 0.0, "p90": 0.0, "mean": 0.0,
                                     "count": 0}
    assert handoff.quantiles([1, 2, 3, 4, 5])["p25"] == 2.0
    with pytest.raises(ValueError, match="one value per task"):
        handoff.sm_idle_ns([0, 1], [0], [1])


def test_a_models_gaps_use_the_measured_sm_of_each_task():
    measured = Trace(*(np.array(v) for v in ([0, 1, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], [0, 1, 2], [7, 7, 7])))
    model = Trace(*(np.array(v) for v in ([2, 1, 0], [0, 0, 0], [10, 5, 0], [11, 6, 1], [0, 0, 0], [0, 0, 0])))
    found = handoff.of_model(model, measured)
    assert found["sm"]["median"] == 4.0 and found["sm"]["count"] == 2  # one SM (7): gaps 5 - 1 and 10 - 6


def _flow_trace(lengths, workers, fold_b):
    graph = TaskGraph.from_lengths(lengths)
    lists = ds.owner_task_lists(graph, workers, 1)
    durations = np.random.default_rng(1).uniform(500, 1500, graph.total)
    if fold_b:
        durations[graph.tiles:graph.tiles + graph.rows] = 0.0
    model = ds.simulate_dependency(graph, durations, lists, handoff_ns=300)
    return graph, lists, (_b_in_first_c(model, graph) if fold_b else model)


@pytest.mark.parametrize("case", ["balanced", "ragged"])
def test_the_flow_model_accepts_its_own_traces_and_names_a_misplaced_b(case):
    lengths = workloads.tiled_row_lengths(case)[:16]
    graph, lists, trace = _flow_trace(lengths, 40, fold_b=True)
    result = ds.check_design_trace(trace, graph, "flow", lists)
    assert result["passed"], result["checks"]
    summary = ds.trace_summary(trace, graph, "flow", 40, lists)
    assert summary["handoff_ns.C"]["min"] >= 0  # measured from the row's last A tile: never negative
    assert set(summary["idle_ns"]) == {"sm", "worker"} and set(summary["model"]["idle_ns"]) == {"sm", "worker"}
    moved = Trace(**{**trace.arrays(), "worker": np.where(trace.task == graph.tiles, -1, trace.worker)})
    assert not ds.check_design_trace(moved, graph, "flow", lists)["checks"]["b_in_first_tile_c"]
    _, _, last = _flow_trace(lengths, 40, fold_b=False)  # B on the last A worker: the dependency model's rules
    assert ds.check_design_trace(last, graph, "dependency", lists)["passed"]


def test_the_chain_oracle_iterates_the_plain_softmax_and_stacks_every_stage():
    lengths = np.array([5, 3, 8])
    values = workloads.packed_fixture(3, 0, lengths)
    offsets = workloads.tile_table(lengths)["row_offsets"]
    stages = chain_model.chain_oracle(values, offsets, 3)
    first = np.concatenate([oracles.softmax(values[None, a:b].astype(np.float64))[0] for a, b in zip(offsets[:-1], offsets[1:])])
    assert np.allclose(stages[0], first, rtol=0, atol=0)
    assert np.allclose(stages[1], chain_model.chain_oracle(stages[0], offsets, 1)[0])
    stacked = chain_model.every_stage(values, offsets, 3)
    assert stacked.size == 3 * values.size and np.array_equal(stacked[values.size:2 * values.size], stages[1])
    assert chain_model.stacked_offsets(offsets, 2).tolist() == [0, 5, 8, 16, 21, 24, 32]
    assert chain_model.worst_relative_error(np.float32(stages[2]), stages[2]) < 1e-6
    assert chain_model.worst_relative_error(np.full(values.size, np.nan), stages[2]) == float("inf")
    with pytest.raises(ValueError, match="at least one stage"):
        chain_model.chain_oracle(values, offsets, 0)


def test_chain_variants_carry_their_stage_count_and_bytes():
    parameters = declared.Parameters()
    chain = [v for v in declared.CHAPTER.variants(parameters) if v.row.chain]
    assert {declared.stages_of(v.id) for v in chain} == set(parameters.chain_stages)
    assert {v.id.case for v in chain} == set(declared.CHAIN_CASES)
    assert {v.row.name for v in chain} == {"chain_graph3", "chain_pdl3", "chain_flow", "chain_fused"}
    assert all(v.calls == declared.stages_of(v.id) for v in chain)
    none = declared.CHAPTER.variants(declared.CHAPTER.parse_parameters({"designs": "flow"}))
    assert not any(v.row.chain for v in none)  # the chain runs only where `designs` names it
    with pytest.raises(ValueError, match="chain_stages above 16"):
        declared.CHAPTER.parse_parameters({"chain_stages": "1,32"})


def test_varlen_cases_join_only_where_workloads_has_them(monkeypatch):
    known = {"balanced", "ragged", "giant"}
    real = workloads.tiled_row_lengths
    monkeypatch.setattr(workloads, "tiled_row_lengths",
                        lambda case: real("ragged") if case == "giant" else real(case) if case in known else
                        (_ for _ in ()).throw(ValueError(f"unknown tiled case {case!r}")))
    assert declared.known_cases(("loguniform", "giant")) == ("giant",)
    variants = declared.CHAPTER.variants(declared.Parameters())
    giant = {v.row.name for v in variants if v.id.case == "giant"}
    assert giant == {d.name for d in declared.active_designs(declared.Parameters()) if d.varlen}
    assert "tiled3" in giant and "pdl3" not in giant and not any(v.id.case == "loguniform" for v in variants)


def _ratio(median, low, high):
    return {"median": median, "ci_low": low, "ci_high": high}


def test_a_megakernel_pays_only_where_both_intervals_lie_above_one():
    chain = {"balanced": {"k1": {"chain_flow": {"vs_pdl": _ratio(1.2, 1.1, 1.3), "vs_fused": _ratio(0.6, 0.5, 0.7)}},
                          "k16": {"chain_flow": {"vs_pdl": _ratio(1.5, 1.4, 1.6), "vs_fused": _ratio(0.9, 0.8, 1.0)}}},
             "ragged": {"k1": {"chain_flow": {"vs_pdl": _ratio(1.2, 1.1, 1.3), "vs_fused": _ratio(1.0, 0.98, 1.02)}},
                        "k4": {"chain_flow": {"vs_pdl": _ratio(1.3, 1.2, 1.4), "vs_fused": _ratio(1.1, 1.01, 1.2)}},
                        "k16": {"chain_flow": {"vs_pdl": _ratio(1.4, 1.3, 1.5), "vs_fused": _ratio(1.2, 1.1, 1.3)}}}}
    assert findings.pays_at(chain) == {"balanced": 0, "ragged": 4}  # a tie (interval holding 1) does not pay
    targets = findings.targets({"chain": chain, "best_tiled_persistent": {"ragged": _ratio(1.12, 1.09, 1.15)}})
    assert targets["chain_k16_vs_pdl.ragged"]["met"] and not targets["best_tiled_persistent.ragged"]["met"]
