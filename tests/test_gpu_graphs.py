"""GPU: every variant of chapter 2 on fresh seeds, graphs replayed with new inputs in their captured buffers,
node counts read from CUDA's DOT text, and the whole chapter run end to end under a short protocol."""
import numpy as np
import pytest

from launchlab.chapters.graphs import CHAPTER, PACKED, RMS_SOFTMAX, TILED_KERNELS, kernels_of
from launchlab.measure.variant import VariantId
from launchlab.model import dot, oracles, workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend
    return CupyBackend()


@pytest.fixture(scope="module")
def modules(backend):
    from launchlab.gpu import build
    return {family: build.load_module(family) for family in ("row_softmax", "tiled_softmax", "empty")}


def test_the_declared_tiled_kernels_are_the_targets_stages():
    from launchlab.gpu.targets import STAGE_KERNELS
    assert TILED_KERNELS == STAGE_KERNELS


@pytest.mark.parametrize("lengths", [[1, 1023, 1025, 5000, 3, 2048], list(workloads.tiled_row_lengths("ragged")[:16])])
def test_tiled_path_matches_oracle(modules, lengths):
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled_softmax"], lengths)
    x = workloads.packed_fixture(FRESH_SEED, 0, lengths)
    result = oracles.compare(path.compute(x), oracles.rms_softmax_packed(x, path.row_offsets),
                             oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}: {result}"


def small_targets(modules):
    """Every kind of target the chapter captures, on irregular small sizes: stream VariantId -> Target."""
    from launchlab.chapters.graphs.targets import EmptyKernels, RowCopies
    from launchlab.gpu.targets import RowPath, TiledPath

    row = RowPath(modules["row_softmax"], 1823, 781)
    return {VariantId.parse("row4.1823x781.stream"): (row, RMS_SOFTMAX),
            VariantId.parse("tiled3.irregular.stream"): (TiledPath(modules["tiled_softmax"], [700, 3000, 1]), PACKED),
            VariantId.parse("row4copies.k3.stream"): (RowCopies(RowPath(modules["row_softmax"], 97, 1500), 3),
                                                      RMS_SOFTMAX),
            VariantId.parse("empty.n5.stream"): (EmptyKernels(modules["empty"], 5), None)}


def test_replayed_graphs_follow_new_inputs_and_keep_one_node_per_launch(modules, backend):
    """Pointers are fixed at capture: new inputs written into the captured buffers give new, correct outputs."""
    from launchlab.chapters.graphs.run import fixture
    from launchlab.gpu.capture import GraphReplay

    for vid, (target, oracle) in small_targets(modules).items():
        replay = GraphReplay(target, backend.stream)
        parsed = dot.parse_dot(replay.dot)
        assert dot.node_counts(parsed, kernels_of(vid.target)) == {"kernel": len(target.launches), "other": 0}, vid
        assert len(dot.topological_order(parsed)) == len(target.launches)
        if vid.target == "empty":
            replay.invoke()
            backend.synchronize()
            continue
        for index in range(3):
            x, reference, offsets = fixture(FRESH_SEED, index, target, oracle)
            for runner in (target, replay):
                result = oracles.compare(runner.compute(x), reference, oracles.RMS_SOFTMAX_TOLERANCE, offsets)
                assert result["passed"], f"{vid} ({type(runner).__name__}), seed {FRESH_SEED}, fixture {index}: {result}"


def test_set_up_steps_are_timed_and_instantiation_is_not_counted_twice(modules, backend):
    from launchlab.gpu.capture import capture
    from launchlab.gpu.targets import RowPath

    path = RowPath(modules["row_softmax"], 128, 8192)
    _, setup = capture(path.invoke, backend.stream)
    assert all(setup[step] > 0 for step in ("capture_us", "end_capture_us", "upload_us", "first_replay_us"))
    if setup["instantiated_in_end_capture"]:
        assert "instantiate_us" not in setup and setup["instantiate_again_us"] > 0
    else:
        assert setup["instantiate_us"] > 0 and "instantiate_again_us" not in setup


def test_the_native_loop_enqueues_n_empty_kernels(modules, backend):
    from launchlab.gpu import native

    library, how = native.build_library()
    if library is None:
        pytest.skip(f"the native loop does not build here: {how}")
    launcher = native.NativeLauncher(library)
    packed = launcher.prepare([(modules["empty"].kernel("empty_kernel").kernel.ptr, 1, 1, ())])
    enqueue_ns, complete_ns = launcher.run(packed, backend.stream.ptr, 16)
    assert 0 < enqueue_ns <= complete_ns


def test_the_chapter_runs_end_to_end_under_a_short_protocol(tmp_path):
    """Every declared variant is built, validated, measured and summarised; the page renders from the run."""
    from launchlab.measure.protocol import MeasurementProtocol
    from launchlab.runner import Session
    from launchlab.store.evidence import RunWriter
    from launchlab.analysis import open_run, recompute

    parameters = CHAPTER.parse_parameters({"row_shapes": "257x1000,128x8192", "tiled_cases": "balanced,ragged",
                                           "fixture_seed": FRESH_SEED, "empty_lengths": "1,8", "row_copies": "1,3",
                                           "copies_shape": "64x2048", "setup_repeats": 2})
    writer = RunWriter("20260101T000000Z-ch02", tmp_path)
    session = Session(CHAPTER, writer, parameters, MeasurementProtocol(warmups=1, rounds=3, batch=4, large_batch=2))
    CHAPTER.run.run(session)
    session.finish()
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    run = open_run(writer.path, require_sealed=False)

    declared = {str(spec.id) for spec in CHAPTER.variants(parameters)}
    measured = set(run.summaries["timing"])
    if not run.record.details["native_loop"]["built"]:
        declared = {v for v in declared if not v.endswith(".native")}
    assert measured == declared
    checked = {c["variant"] for c in run.json("validation.json")}
    assert checked == {v for v in declared if not v.startswith("empty.")}
    for spec in CHAPTER.variants(parameters):
        if spec.id.submission == "graph":
            nodes = run.summaries["nodes"][str(spec.id)]
            assert nodes["kernel"] == nodes["stream_launches"] and nodes["other"] == 0, spec.id
    assert headline["kernel_nodes.row4.128x8192.graph"] == 4
    assert all(value for value in CHAPTER.page.page_values(run).values())
    CHAPTER.page.setup_table(run).to_html()
    CHAPTER.page.timing_table(run).to_html()
    assert CHAPTER.parameters_of(run.record) == parameters
