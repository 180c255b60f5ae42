"""GPU: the flow kernel (both B placements, acquire and relaxed polling) against the float64 oracle on fresh seeds for
balanced, ragged and irregular rows, on a stream and as a graph replay, twice in a row (its rounds carry over);
the chain's four contenders against the float64 chain at every stage; co-residency refused before launch; a
traced build whose trace passes the flow model's checks."""
import numpy as np
import pytest

from launchlab.chapters.megakernels import chain_model
from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.model import oracles, workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777]
LENGTH_SETS = {"balanced": list(workloads.tiled_row_lengths("balanced")),
               "ragged": list(workloads.tiled_row_lengths("ragged")), "irregular": IRREGULAR}


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter (capture needs one)


@pytest.fixture(scope="module")
def modules(backend):
    from launchlab.gpu import build, device
    from launchlab.chapters.megakernels.targets import fused_defines

    if device.compute_capability() < (9, 0):
        pytest.skip("the chain's PDL contender needs compute capability 9.0")
    return {"tiled": build.load_module("tiled_softmax"), "flow": build.load_module("megakernel_flow"),
            "flow_traced": build.load_module("megakernel_flow", {"LAUNCHLAB_TRACE": None}),
            "chain_tiled": build.load_module("chain_tiled"), "chain_flow": build.load_module("chain_flow"),
            "fused_chain": build.load_module("fused_softmax_chain", fused_defines(device.shared_limit()))}


@pytest.mark.parametrize("name", sorted(LENGTH_SETS))
def test_flow_matches_the_oracle_from_the_stream_and_as_a_graph(modules, name):
    import cupy

    from launchlab.chapters.megakernels import flow
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], LENGTH_SETS[name])
    values = workloads.packed_fixture(FRESH_SEED, 0, path.lengths)
    reference = oracles.rms_softmax_packed(values, path.row_offsets)
    stream = cupy.cuda.get_current_stream()
    for fold_b in (True, False):
        for relaxed in (False, True):
            target = flow.FlowPersistent(modules["flow"], path, 0, fold_b, 0, relaxed)
            for invoke in (target.invoke, GraphReplay(target, stream).invoke):
                for _ in range(2):
                    out = target.compute(values, invoke)
                    result = oracles.compare(out, reference, oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
                    assert result["passed"], (FRESH_SEED, name, fold_b, relaxed, result)
            target.check_error()
            assert target.counters_consistent(), (FRESH_SEED, name, fold_b)
            target.poison()
            assert np.isnan(target.output()).all()  # a poisoned output never passes


@pytest.mark.parametrize("name", ["balanced", "irregular"])
def test_the_chain_contenders_match_every_stage(modules, name):
    from launchlab.chapters.megakernels import chain, flow
    from launchlab.gpu import device

    buffers = flow.StageBuffers(LENGTH_SETS[name], 5)
    values = workloads.packed_fixture(FRESH_SEED, 1, buffers.lengths)
    reference = chain_model.every_stage(values, buffers.row_offsets, 5)
    offsets = chain_model.stacked_offsets(buffers.row_offsets, 5)
    for target in (chain.Graph3Chain(modules["chain_tiled"], buffers), chain.Pdl3Chain(modules["chain_flow"], buffers),
                   chain.FusedChain(modules["fused_chain"], buffers, device.shared_limit()),
                   flow.FlowPersistent(modules["chain_flow"], buffers, 0, False),
                   flow.FlowPersistent(modules["chain_flow"], buffers, 0, True)):
        for _ in range(2):
            result = oracles.compare(target.compute(values), reference, chain_model.CHAIN_TOLERANCE, offsets)
            assert result["passed"], (FRESH_SEED, name, type(target).__name__, result)


def test_more_workers_than_fit_are_refused_before_launch(modules):
    from launchlab.chapters.megakernels import flow
    from launchlab.chapters.megakernels.persistent import NotCoResident
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], LENGTH_SETS["balanced"])
    with pytest.raises(NotCoResident, match="co-resident"):
        flow.FlowPersistent(modules["flow"], path, workers_per_sm=64)


def test_a_traced_flow_run_passes_its_models_checks(modules):
    from launchlab.chapters.megakernels import flow, megakernel_designs as designs
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], LENGTH_SETS["ragged"])
    for fold_b, design in ((True, "flow"), (False, "dependency")):
        target = flow.FlowPersistent(modules["flow_traced"], path, 0, fold_b)
        target.load(workloads.packed_fixture(FRESH_SEED, 2, path.lengths))
        trace = designs.trace(target, modules["flow_traced"])
        result = ds.check_design_trace(trace, target.task_graph(), design, target.lists)
        assert result["passed"], (FRESH_SEED, design, result["checks"])
