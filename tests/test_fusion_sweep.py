"""Chapter 3's sweep on the CPU: the declaration's sweep helpers (grid, shapes, calls per replay, contenders, plans)
and chapters/fusion/sweep.py on fakes (an array module standing in for CuPy, fake variants and session)."""
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from launchlab.chapters import fusion
from launchlab.chapters.fusion import plans as fusion_plans, sweep
from launchlab.chapters.fusion.targets import Context
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads

from fusion_fakes import assert_policy_pick

REPO_ROOT = Path(__file__).resolve().parents[1]
H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448}
MIB = 2**20


def typed(**given) -> fusion.Parameters:
    """Parameters as a notebook or run.json gives them (text), parsed by the declaration."""
    return fusion.CHAPTER.parse_parameters(given)


# ---------------------------------------------------------------- the sweep's grid and shapes
def test_the_default_4096_row_series_is_128_i_for_i_from_2_to_98_step_2():
    grid = fusion.sweep_grid(typed(sweep_4096="2:98:2", sweep_128=""))
    assert grid["128"] == []
    assert grid["4096"] == [(4096, 128 * i) for i in range(2, 99, 2)]
    assert len(grid["4096"]) == 49 and grid["4096"][0] == (4096, 256) and grid["4096"][-1] == (4096, 12544)


def test_an_explicit_128_row_list_keeps_its_order_once_per_length_and_skips_empty_items():
    grid = fusion.sweep_grid(typed(sweep_4096="", sweep_128="65536, 4096,,65536 ,100003,"))
    assert grid == {"4096": [], "128": [(128, 65536), (128, 4096), (128, 100003)]}


@pytest.mark.parametrize("field, text, message", [
    ("sweep_4096", "2:98:", "'2:98:' is not first:last:step"), ("sweep_4096", ":98:2", "is not first:last:step"),
    ("sweep_4096", "2,98,2", "is not first:last:step"), ("sweep_4096", "2.0:98:2", "is not first:last:step"),
    ("sweep_4096", "99:98:1", "needs 1 <= first <= last and step >= 1"),
    ("sweep_128", "0x10", "'0x10' is not a comma-separated list of integers"),
    ("sweep_128", "1e3", "is not a comma-separated list"), ("sweep_128", "4096 8192", "is not a comma-separated list"),
    ("sweep_128", "4096,-1", "counts must be positive")])
def test_a_bad_grid_string_is_a_value_error_naming_the_text(field, text, message):
    with pytest.raises(ValueError, match=f"parameter {field} of fusion must be"):
        typed(**{field: text})
    with pytest.raises(ValueError, match=message):
        typed(**{field: text})


def test_sweep_shapes_are_the_grid_once_without_the_fixed_shapes_and_all_shapes_put_the_fixed_first():
    parameters = typed(sweep_4096="2:98:2")
    fixed = parameters.shapes
    grid = fusion.sweep_grid(parameters)
    swept = fusion.sweep_shapes(parameters)
    assert len(swept) == len(set(swept)) == 46 + 11       # 49 - 3 and 12 - 1 fixed shapes on the grid
    assert not set(swept) & set(fixed)
    assert set(swept) | set(fixed) == set(grid["4096"] + grid["128"]) | set(fixed)
    assert fusion.all_shapes(parameters) == list(fixed) + swept + fusion.plane_shapes(parameters)
    assert len(fusion.sweep_shapes(fusion.Parameters())) == 11   # by default the 128-row slice alone


def test_sweep_calls_are_a_power_of_two_from_1_to_32_moving_about_256_mib():
    budget = fusion.SWEEP_BYTES_PER_REPLAY
    assert budget == 256 * MIB and fusion.SWEEP_MAX_CALLS == 32
    previous = fusion.SWEEP_MAX_CALLS
    for rows, cols in sorted(fusion.sweep_grid(typed(sweep_4096="2:98:2"))["4096"]):  # growing rows: never more calls
        calls, copy_bytes = fusion.sweep_calls(rows, cols), 8 * rows * cols
        assert calls in (1, 2, 4, 8, 16, 32) and calls <= previous
        if 1 < calls < fusion.SWEEP_MAX_CALLS:  # neither capped: within a factor 2 below the budget
            assert budget / 2 < calls * copy_bytes <= budget, (rows, cols)
        previous = calls
    for rows, cols in fusion.sweep_grid(fusion.Parameters())["128"]:
        calls = fusion.sweep_calls(rows, cols)
        assert calls == fusion.SWEEP_MAX_CALLS or calls * 8 * rows * cols > budget / 2, (rows, cols)


def test_a_sweep_shape_is_timed_warm_from_a_graph_of_sweep_calls_and_cold_from_the_stream():
    parameters = typed(baselines="triton")
    table = {str(spec.id) for spec in fusion.CHAPTER.variants(parameters)}
    for rows, cols in fusion.sweep_shapes(parameters):
        shape, calls = workloads.shape_name(rows, cols), fusion.sweep_calls(rows, cols)
        assert fusion.device_submission(parameters, rows, cols) == f"graph{calls}"
        submissions = {vid.split(".")[2] for vid in table if vid.split(".")[1] == shape}
        assert submissions == {f"graph{calls}", "stream"}, shape


@pytest.mark.parametrize("baselines, expected", [
    ("cudnn,torch,triton", ["copy", "copy4", "fused_rms", "fused_plain", "cudnn", "torch", "triton"]),
    ("triton, cudnn", ["copy", "copy4", "fused_rms", "fused_plain", "cudnn", "triton"]),   # the declared order
    ("", ["copy", "copy4", "fused_rms", "fused_plain"])])
def test_sweep_contenders_never_include_the_row_path(baselines, expected):
    assert fusion.sweep_contenders(typed(baselines=baselines)) == expected


def test_fused_plans_cover_all_shapes_in_order_by_the_declared_policy():
    parameters = typed(sweep_128="4096,131072,262144,1000003")
    plans = fusion.fused_plans(parameters, H200)
    assert list(plans) == [workloads.shape_name(*shape) for shape in fusion.all_shapes(parameters)]
    for shape, plan in plans.items():
        rows, cols = workloads.parse_shapes(shape)[0]
        assert plan == fusion.fused_plan(rows, cols, H200)
        # the launch policy: the candidate of least score among every candidate's predictions, ties broken as
        # plans.pick says
        assert list(plan["predicted_us"]) == [c["tag"] for c in fusion_plans.candidates(rows, cols, H200)], shape
        assert_policy_pick(plan, rows, cols, H200)


# ---------------------------------------------------------------- sweep.py on fakes
def numpy_as_cupy() -> types.ModuleType:
    """An array module with NumPy's functions and CuPy's memory pool: what sweep.py asks of CuPy, on the CPU."""
    fake = types.ModuleType("cupy")
    fake.__dict__.update({name: getattr(np, name) for name in dir(np) if not name.startswith("__")})
    fake.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return fake


class FakeVariant:
    """A sweep variant: y = function(x) on invoke, NaN after poison; records the calls in order."""
    submissions = 1

    def __init__(self, function):
        self.function, self.calls = function, []

    def load(self, x):
        self.calls.append("load")
        self.x = x

    def poison(self):
        self.calls.append("poison")
        self.y = np.full_like(self.x, np.nan)

    def invoke(self):
        self.calls.append("invoke")
        self.y = self.function(self.x).astype(np.float32)

    def device_output(self):
        return self.y


class FakeSession:
    def __init__(self, parameters):
        self.parameters, self.checks, self.events, self.skipped = parameters, [], [], []
        self.backend = types.SimpleNamespace(stream=types.SimpleNamespace(synchronize=lambda: self.events.append("sync")))

    def add_check(self, labels, result):
        self.checks.append((labels, result))

    def require_passed(self, when):
        self.events.append(("require_passed", when))

    def skip_all(self, reason, target, case=None):
        self.skipped.append((target, case))

    def measure(self, kind, measured, flush=None):
        self.events.append((kind, sorted(str(m.id) for m in measured), flush))


@pytest.fixture
def fake_cupy(monkeypatch):
    fake = numpy_as_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(sweep, "device_fixture", lambda seed, index, rows, cols:
                        workloads.rms_softmax_fixture(seed, index, rows, cols))
    return fake


def test_compute_on_device_poisons_before_the_one_invocation_and_waits_for_it():
    variant, session = FakeVariant(oracles.softmax), FakeSession(fusion.Parameters())
    x = workloads.rms_softmax_fixture(1, 0, 4, 8)
    y = sweep.compute_on_device(variant, x, session.backend.stream)
    assert variant.calls == ["load", "poison", "invoke"] and session.events == ["sync"]
    assert oracles.compare(y, oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)["passed"]


def test_validate_on_device_checks_each_variant_against_its_declared_oracle(fake_cupy):
    def one_bit_off(x):
        y = x.copy()
        y.view(np.uint32)[0, 0] ^= 1
        return y

    session = FakeSession(typed(fixture_seed=7))
    variants = {VariantId("copy", "4x8", "stream"): FakeVariant(lambda x: x.copy()),
                VariantId("copy", "4x8", "graph32"): FakeVariant(one_bit_off),
                VariantId("fused_rms", "4x8", "stream"): FakeVariant(oracles.rms_softmax),
                VariantId("fused_plain", "4x8", "stream"): FakeVariant(oracles.rms_softmax)}  # the wrong form
    sweep.validate_on_device(session, variants, 4, 8, 3, "after")
    passed = {labels["variant"]: result["passed"] for labels, result in session.checks}
    assert passed == {"copy.4x8.stream": True, "copy.4x8.graph32": False, "fused_rms.4x8.stream": True,
                      "fused_plain.4x8.stream": False}
    copy_result = session.checks[1][1]
    assert copy_result == {"passed": False, "elements": 32, "failing_elements": 1, "exact": True}
    labels = session.checks[0][0]
    assert labels == {"variant": "copy.4x8.stream", "fixture": 3, "phase": "after", "on_device": True,
                      "input": {"generator": sweep.GENERATOR, "seed": workloads.fixture_seed(7, 3)}}


def test_screen_on_device_drops_a_library_failing_the_oracle_and_says_why(fake_cupy):
    session = FakeSession(fusion.Parameters())
    targets = {"fused_plain": FakeVariant(lambda x: np.zeros_like(x)),   # ours: never screened
               "cudnn": FakeVariant(oracles.softmax), "triton": FakeVariant(lambda x: np.full_like(x, 0.5))}
    libraries = {name: {"unavailable": {}} for name in ("cudnn", "triton")}
    sweep.screen_on_device(session, targets, 4, 8, libraries)
    assert list(targets) == ["fused_plain", "cudnn"]
    assert libraries["cudnn"]["unavailable"] == {}
    assert libraries["triton"]["unavailable"]["4x8"].startswith("failed the float64 softmax oracle before timing (")
    assert targets["fused_plain"].calls == []
    assert session.skipped == [("triton", "4x8")]


def test_screen_on_device_drops_a_library_that_raises_on_its_first_call(fake_cupy):
    def refuses(x):
        raise RuntimeError("BLOCK too large for the shape")

    session = FakeSession(fusion.Parameters())
    targets = {"torch": FakeVariant(refuses), "cudnn": FakeVariant(oracles.softmax)}
    libraries = {name: {"unavailable": {}} for name in ("torch", "cudnn")}
    sweep.screen_on_device(session, targets, 4, 8, libraries)
    assert list(targets) == ["cudnn"] and session.skipped == [("torch", "4x8")]
    assert libraries["torch"]["unavailable"]["4x8"] == (
        "failed on its first call (RuntimeError: BLOCK too large for the shape); not timed")
    assert session.checks == []   # screening records no check


def sweep_variants(parameters) -> list:
    """The declared variants at the sweep's own points, as run.py hands them to run_sweep."""
    return [v for v in fusion.CHAPTER.variants(parameters) if "sweep" in v.enters and "table" not in v.enters]


def sweep_point_fakes(monkeypatch) -> list:
    """prepare_point and validate_on_device replaced: a point's graph and stream invocations of the copy; returns
    the validations asked for, as (shape, fixture, phase)."""
    validated = []

    def prepare_point(session, context, libraries, setup, shape, variants):
        rows, cols = workloads.parse_shapes(shape)[0]
        target = FakeVariant(lambda x: x)
        return {VariantId("copy", shape, f"graph{fusion.sweep_calls(rows, cols)}"): target,
                VariantId("copy", shape, "stream"): target}

    def validate_on_device(session, variants, rows, cols, index, phase):
        validated.append((workloads.shape_name(rows, cols), index, phase, sorted(str(v) for v in variants)))

    monkeypatch.setattr(sweep, "prepare_point", prepare_point)
    monkeypatch.setattr(sweep, "validate_on_device", validate_on_device)
    return validated


def test_run_sweep_times_the_shapes_sweep_group_at_a_time_and_validates_each_after(fake_cupy, monkeypatch):
    validated = sweep_point_fakes(monkeypatch)
    parameters = typed(sweep_4096="2:22:2", sweep_128="4096")   # 11 + 1, 4096x512 and 4096x1024 fixed
    shapes = fusion.sweep_shapes(parameters)
    assert len(shapes) == 10 and sweep.SWEEP_GROUP == 8
    session, cold = FakeSession(parameters), types.SimpleNamespace(flush=object())
    sweep.run_sweep(session, Context(None, {}, {}), {}, cold, {}, sweep_variants(parameters))
    timed = [event for event in session.events if event[0] in ("warm", "cold")]
    groups = [shapes[:8], shapes[8:]]
    assert [kind for kind, _, _ in timed] == ["warm", "cold", "warm", "cold"]
    for (_, warm, no_flush), (_, streamed, flush), group in zip(timed[::2], timed[1::2], groups):
        names = [workloads.shape_name(*shape) for shape in group]
        assert warm == sorted(f"copy.{n}.graph{fusion.sweep_calls(*s)}" for n, s in zip(names, group))
        assert streamed == sorted(f"copy.{n}.stream" for n in names)
        assert no_flush is None and flush is cold.flush
    assert [(shape, index, phase) for shape, index, phase, _ in validated] == [
        (workloads.shape_name(*shape), workloads.HELD_OUT_FIXTURE, "after") for shape in shapes]
    assert all(variants == [f"copy.{shape}.graph{fusion.sweep_calls(*workloads.parse_shapes(shape)[0])}"]
               for shape, _, _, variants in validated)  # after timing: the graphs (they share the targets)
    assert [e for e in session.events if e[0] == "require_passed"] == 2 * [
        ("require_passed", "before timing (sweep)"), ("require_passed", "after timing (sweep)")]


def test_run_sweep_on_an_empty_sweep_times_nothing(fake_cupy, monkeypatch):
    validated = sweep_point_fakes(monkeypatch)
    session = FakeSession(typed(sweep_4096="", sweep_128=""))
    sweep.run_sweep(session, Context(None, {}, {}), {}, types.SimpleNamespace(flush=None), {},
                    sweep_variants(session.parameters))
    assert session.events == [] and validated == []


def test_run_sweep_on_an_empty_sweep_needs_no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)   # `import cupy` raises ImportError
    session = FakeSession(typed(sweep_4096="", sweep_128=""))
    sweep.run_sweep(session, Context(None, {}, {}), {}, types.SimpleNamespace(flush=None), {},
                    sweep_variants(session.parameters))
    assert session.events == []
