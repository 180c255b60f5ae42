"""The float64 oracle: hand-checked cases, an independent formulation, and bad input."""
import math

import numpy as np
import pytest

from launchlab.model import oracles
from launchlab.model import workloads


def rms_softmax_by_hand(row):
    """Independent formulation: plain Python floats, math.fsum, no shift by the max.

    Dividing exp(x) by sum(exp(x)) equals the shifted form mathematically; with the
    small inputs used here neither overflows."""
    rho = math.sqrt(math.fsum(v * v for v in row) / len(row))
    weights = [math.exp(v) for v in row]
    total = math.fsum(weights)
    return [rho * w / total for w in weights]


def test_hand_checked_cases():
    assert oracles.rms_softmax(np.array([[1.0, 1.0]])) == pytest.approx(np.array([[0.5, 0.5]]))
    assert oracles.rms_softmax(np.array([[0.0, 0.0, 0.0]])) == pytest.approx(np.zeros((1, 3)))  # rho = 0
    rho = math.sqrt(12.5)  # row (3, 4): mean of squares (9 + 16) / 2
    p = 1 / (1 + math.e)  # exp(3 - 4) / (exp(-1) + 1)
    assert oracles.rms_softmax(np.array([[3.0, 4.0]])) == pytest.approx(np.array([[rho * p, rho * (1 - p)]]), rel=1e-15)
    assert oracles.rms_softmax(np.array([[-2.0]])) == pytest.approx(np.array([[2.0]]))  # one element: rho * 1


def test_rows_sum_to_rho():
    x = workloads.rms_softmax_fixture(5, 0, 7, 33)
    y = oracles.rms_softmax(x)
    rho = np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1))
    assert y.sum(axis=1) == pytest.approx(rho, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_independent_formulation(seed):
    generator = np.random.default_rng(seed)
    x = generator.normal(size=(5, 17)) * 3
    expected = [rms_softmax_by_hand(list(row)) for row in x]
    assert oracles.rms_softmax(x) == pytest.approx(np.array(expected), rel=1e-12, abs=1e-300)


def test_shift_invariance_of_the_softmax_part():
    """Adding a constant changes rho but not exp(x - m) / z."""
    x = workloads.rms_softmax_fixture(9, 1, 4, 50).astype(np.float64)
    y, y_shifted = oracles.rms_softmax(x), oracles.rms_softmax(x + 100.0)
    rho = np.sqrt(np.mean(x ** 2, axis=1, keepdims=True))
    rho_shifted = np.sqrt(np.mean((x + 100.0) ** 2, axis=1, keepdims=True))
    assert y / rho == pytest.approx(y_shifted / rho_shifted, rel=1e-10)


@pytest.mark.parametrize("bad, message", [
    (np.array([[1.0, np.nan]]), "non-finite value nan at \\(0, 1\\)"),
    (np.array([[1.0], [np.inf]]), "non-finite value inf at \\(1, 0\\)"),
    (np.zeros((3, 0)), "zero columns"),
    (np.zeros(4), "2-D"),
])
def test_bad_input_is_named(bad, message):
    with pytest.raises(ValueError, match=message):
        oracles.rms_softmax(bad)


def test_compare_never_passes_nan_and_flags_wrong_values():
    x = workloads.rms_softmax_fixture(3, 0, 6, 40)
    ref = oracles.rms_softmax(x)
    good = ref.astype(np.float32)
    assert oracles.compare(good, ref, oracles.RMS_SOFTMAX_TOLERANCE)["passed"]
    poisoned = good.copy()
    poisoned[2, 7] = np.nan
    result = oracles.compare(poisoned, ref, oracles.RMS_SOFTMAX_TOLERANCE)
    assert not result["passed"] and result["non_finite_elements"] == 1
    scaled = good * np.float32(1.001)  # a wrong rho: 0.1% off everywhere
    assert not oracles.compare(scaled, ref, oracles.RMS_SOFTMAX_TOLERANCE)["passed"]


def test_fixtures_are_deterministic_and_distinct():
    a = workloads.rms_softmax_fixture(2026, 0, 8, 64)
    assert np.array_equal(a, workloads.rms_softmax_fixture(2026, 0, 8, 64))
    assert not np.array_equal(a, workloads.rms_softmax_fixture(2026, workloads.HELD_OUT_FIXTURE, 8, 64))
    assert a.dtype == np.float32 and np.isfinite(a).all()


@pytest.mark.parametrize("text, message", [("4096x0", "zero columns"), ("0x5", "zero rows"),
                                           ("12", "not ROWSxCOLS"), ("axb", "not ROWSxCOLS")])
def test_bad_shapes_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        workloads.parse_shapes(text)


def test_shapes_parse():
    assert workloads.parse_shapes("4096x4096, 128x8192") == [(4096, 4096), (128, 8192)]
