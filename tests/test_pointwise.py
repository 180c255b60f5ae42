"""Example A on the CPU: the exact oracle on hand-checked values, the fixtures, the byte model, and the
kernels' build (sm_90, FMA contraction off, no local memory, no fused multiply-add in the PTX)."""
import json
import shutil
import subprocess

import numpy as np
import pytest

from launchlab.gpu import build
from launchlab.chapters.example_a_pointwise import model

ARCH = "sm_90"  # the H200 of the book's runs

ULP_AT_ONE = 2.0 ** -23  # spacing of float32 in [1, 2)


@pytest.mark.parametrize("x, expected", [
    (1.0, 2.0),                                   # a = 2, b = 4, y = 2
    (-1.0, 0.0),                                  # a = +0
    (0.5, 1.125),                                 # a = 1.5, b = 2.25
    (-3.0, 2.0),                                  # a = -2, b = 4
    (15.5, 136.125),                              # a = 16.5, b = 272.25
    # a = 1 + 2**-12: a*a = 1 + 2**-11 + 2**-24, exactly half an ulp above 1 + 2**-11: the tie goes to
    # the even neighbour, 1 + 2**-11
    (2.0 ** -12, (1.0 + 2.0 ** -11) / 2),
    # a = 1 + 3 * 2**-12: a*a = 1 + 12,288 ulp + 4.5 ulp: a tie between 12,292 and 12,293; even wins
    (3 * 2.0 ** -12, (1.0 + 12_292 * ULP_AT_ONE) / 2),
    # a = 1 + 2**-12 + 2**-16: a*a = 1 + 4,352 ulp + 0.5625... ulp: above the tie, rounds up to 4,353
    (2.0 ** -12 + 2.0 ** -16, (1.0 + 4_353 * ULP_AT_ONE) / 2),
])
def test_oracle_on_hand_checked_values(x, expected):
    y = model.reference(np.array([x], dtype=np.float32))
    assert y.dtype == np.float32
    assert y[0] == np.float32(expected), (x, float(y[0]), expected)
    assert float(np.float32(expected)) == expected  # the expected value itself is a float32


def test_the_rounding_cases_really_round():
    """The squares above are not float32 numbers: b is a rounded result, not an exact one."""
    for x in (2.0 ** -12, 3 * 2.0 ** -12, 2.0 ** -12 + 2.0 ** -16):
        a = 1.0 + x
        assert float(np.float32(a * a)) != a * a  # float(): NumPy would compare in float32


def test_oracle_matches_the_float64_route_on_fixtures():
    for index in range(model.HELD_OUT_FIXTURE + 1):
        x = model.fixture(11, index, 1 << 18)
        assert model.compare_exact(model.reference(x), model.reference_via_float64(x))["passed"]


def test_positive_zero_from_minus_one():
    y = model.reference(np.array([-1.0], dtype=np.float32))
    assert y.view(np.uint32)[0] == 0  # +0, bit for bit


def test_fixtures_are_dyadic_bounded_deterministic_and_distinct():
    n = 32_768
    first = model.fixture(5, 0, n)
    assert first.dtype == np.float32 and first.shape == (n,)
    assert np.array_equal(first, model.fixture(5, 0, n))
    assert not np.array_equal(first, model.fixture(5, 1, n))
    assert not np.array_equal(first, model.fixture(6, 0, n))
    assert np.array_equal(first[:model.EDGE_VALUES.size].view(np.uint32), model.EDGE_VALUES.view(np.uint32))
    assert np.abs(first).max() <= 16.0
    scaled = first.astype(np.float64) * 2 ** model.DYADIC_SHIFT
    assert np.array_equal(scaled, np.round(scaled))
    assert np.unique(first).size > n // 2  # not a handful of repeated values
    assert model.fixture(5, 0, 3).shape == (3,)  # shorter than the edge values


def test_every_size_gets_a_different_fixture():
    assert model.fixture_seed(1, 0, 256) != model.fixture_seed(1, 0, 32_768)


@pytest.mark.parametrize("bad", [np.array([0.1], np.float32), np.array([17.0], np.float32),
                                 np.array([np.nan], np.float32), np.array([1.0], np.float64),
                                 np.zeros((2, 2), np.float32), np.array([], np.float32)])
def test_check_input_refuses_what_the_exact_check_does_not_cover(bad):
    with pytest.raises(ValueError):
        model.check_input(bad)


def test_compare_exact_fails_nan_signed_zero_and_one_ulp():
    ref = model.reference(model.fixture(3, 0, 1000))
    assert model.compare_exact(ref.copy(), ref) == {"passed": True, "elements": 1000, "mismatches": 0,
                                                    "non_finite": 0, "first_mismatch": None}
    poisoned = np.full_like(ref, np.nan)
    result = model.compare_exact(poisoned, ref)
    assert not result["passed"] and result["mismatches"] == 1000 and result["non_finite"] == 1000
    json.dumps(result, allow_nan=False)  # a run stores it
    off = ref.copy()
    off.view(np.uint32)[17] += 1
    result = model.compare_exact(off, ref)
    assert not result["passed"] and result["mismatches"] == 1 and result["first_mismatch"]["index"] == 17
    zeros = np.zeros(1, np.float32)
    assert not model.compare_exact(-zeros, zeros)["passed"]
    assert not model.compare_exact(ref.astype(np.float64), ref)["passed"]


def test_grid_covers_every_element():
    assert [model.grid(n) for n in (256, 32_768, 1_048_576, 16_777_216)] == [1, 128, 4096, 65_536]
    assert model.grid(257) == 2
    with pytest.raises(ValueError):
        model.grid(0)


# ------------------------------------------------------------------------------------- the kernels' build
def nvcc_build(family: str, extra=(), defines=None) -> dict:
    """ptxas's report and the PTX of kernels/<family>.cu with the house options plus `extra`."""
    import tempfile
    from pathlib import Path

    options = build.compile_options(defines, arch=ARCH) + tuple(extra)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / f"{family}.cu"
        source.write_text(build.expand_source(build.KERNEL_DIR / f"{family}.cu"))
        cubin = subprocess.run(["nvcc", *options, "-cubin", "-Xptxas", "-v", "-o", str(source.with_suffix(".cubin")),
                                str(source)], capture_output=True, text=True)
        assert cubin.returncode == 0, cubin.stderr
        ptx = subprocess.run(["nvcc", *options, "-ptx", "-o", str(source.with_suffix(".ptx")), str(source)],
                             capture_output=True, text=True)
        assert ptx.returncode == 0, ptx.stderr
        sass = None
        if shutil.which("cuobjdump"):
            sass = subprocess.run(["cuobjdump", "-sass", str(source.with_suffix(".cubin"))], capture_output=True,
                                  text=True, check=True).stdout
        return {"log": cubin.stderr, "resources": build.parse_ptxas(cubin.stderr),
                "ptx": source.with_suffix(".ptx").read_text(), "sass": sass}


needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")


@pytest.mark.slow
@needs_nvcc
def test_pointwise_kernels_build_for_sm90_without_local_memory_or_fma():
    report = nvcc_build("pointwise", model.COMPILE_OPTIONS)
    assert set(report["resources"]) == {"pw_add_one", "pw_square", "pw_halve", "pw_fused"}, report["log"]
    for kernel, resources in report["resources"].items():
        assert resources["spill_stores"] == resources["spill_loads"] == 0, (kernel, resources)
        assert resources["stack_bytes"] == resources["local_bytes"] == 0, (kernel, resources)
        assert resources["registers"] <= 32, (kernel, resources)
    ptx = report["ptx"]
    assert f".target {ARCH}" in ptx
    assert "fma." not in ptx and "mad.f32" not in ptx
    assert ptx.count("add.rn.f32") == 2 and ptx.count("mul.rn.f32") == 4  # one add, two muls, in each path
    if report["sass"] is not None:
        assert "FFMA" not in report["sass"]


@pytest.mark.slow
@needs_nvcc
def test_pointwise_ptx_does_not_depend_on_the_fmad_flag():
    """The explicit-rounding intrinsics carry the guarantee: the PTX is the same with contraction on."""
    strip = lambda text: "\n".join(line for line in text.splitlines() if not line.startswith("//"))  # noqa: E731
    assert strip(nvcc_build("pointwise", model.COMPILE_OPTIONS)["ptx"]) == strip(nvcc_build("pointwise")["ptx"])
