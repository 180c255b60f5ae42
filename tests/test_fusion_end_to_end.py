"""Chapter 3's run.py end to end on fake GPU modules (fusion_fakes.py): every output written, and a row added to the
declaration reaches every one of them."""
import dataclasses
import json

import pytest

from launchlab.analysis import open_run
from launchlab.chapters import fusion
from launchlab.chapters.fusion import plans, summary
from launchlab.gpu import ncu
from launchlab.chapters.fusion import profile
from launchlab.measure.variant import VariantId
from launchlab.model import workloads
from launchlab.runner import SAMPLES_FILE

from fusion_fakes import FAKE_PLANE_BYTES, assert_policy_pick, run_on_fakes


def test_run_py_end_to_end_on_fake_gpu_modules(tmp_path, monkeypatch):
    """run.run(session) through the real Session, protocol, checks, samples and summary: every declared
    variant of the rows that set up is measured, at the fixed shapes and the sweep's points; a library failing the
    oracle is dropped with a note; the fused kernel of each shape is the plan's; Nsight Compute and
    compute-sanitizer are asked as the parameters say."""
    session, writer, asked, summaries, headline = run_on_fakes(tmp_path, monkeypatch)
    parameters = session.parameters
    measured = {s["variant"] for s in session.samples}
    declared = {str(spec.id) for spec in fusion.CHAPTER.variants(parameters)}
    assert measured == {v for v in declared if VariantId.parse(v).target not in ("torch", "triton")}
    assert set(session.skipped) == declared - measured
    details = session.record.details
    plans = details["fused_plans"]
    assert plans == fusion.fused_plans(parameters, session.record.device)
    drawn = fusion.plane_shapes(parameters)
    assert len(drawn) == 3 and all(4 * r * c <= FAKE_PLANE_BYTES for r, c in drawn)
    for shape, plan in plans.items():
        assert_policy_pick(plan, *workloads.parse_shapes(shape)[0], session.record.device)
    assert set(plans) == {"64x128", "16x1001", "128x7", "128x100"} | {workloads.shape_name(*s) for s in drawn}
    assert set(session.builds) == {"row_softmax", "copy_vec4", "instruments"} | {plan["module"] for plan in plans.values()}
    assert {(design, rows, cols, mode) for design, rows, cols, mode, _ in asked["designs"]} == {
        (plans[workloads.shape_name(rows, cols)]["design"], rows, cols, mode)
        for rows, cols in ((64, 128), (128, 7), (128, 100), *drawn) for mode in ("rms", "plain")
        if plans[workloads.shape_name(rows, cols)]["design"] != "row"}   # the row kernel (FusedRow) serves the rest
    assert asked["ncu"] == [(64, 128, plans["64x128"], ["copy", "copy4", "row4", "fused_rms", "fused_plain", "cudnn"])]
    assert asked["sanitizer"] == [("launchlab.chapters.fusion.sanitize", ("memcheck",))]
    assert json.loads((writer.path / "sanitizer/memcheck.json").read_text())["errors"] == 0
    assert details["sanitizer"]["tools"] == ["memcheck"] and details["sanitizer"]["clean"] is True
    assert summaries["sanitizer"]["memcheck"]["clean"] and "racecheck" not in summaries["sanitizer"]
    assert [p["shape"] for p in summaries["sweep"]["128"]] == ["128x7", "128x100"] and summaries["sweep"]["4096"] == []
    assert "PyTorch cannot be imported" in details["baselines"]["torch"]["unavailable"]["64x128"]
    assert set(details["baselines"]["triton"]["unavailable"]) == set(plans)
    assert all(reason.startswith("failed the float64 softmax oracle before timing (")
               for reason in details["baselines"]["triton"]["unavailable"].values())
    assert session.record.environment["libraries"] == {"cudnn": "1.0", "triton": "1.0"}
    assert details["baselines"]["cudnn"]["setup"]["16x1001"] == {"call": "cudnn (fake)"}
    phases = {c["phase"] for c in session.checks}
    assert phases == {"before", "after"} and all(c["passed"] for c in session.checks)
    assert all(c.get("on_device") for c in session.checks)     # every fixture drawn and checked on the device
    assert {c["variant"] for c in session.checks} == measured
    assert details["plane_protocol"]["rounds"] == parameters.plane_rounds == fusion.PLANE_ROUNDS
    assert [p["shape"] for p in summaries["plane"]["points"]] == [workloads.shape_name(*s) for s in drawn]
    assert headline["plane.points"] == 3
    setup = json.loads((writer.path / "graphs/setup.json").read_text())
    assert setup["row4.64x128.graph32"]["nodes"] == 32 and setup["row4.64x128.graph"]["nodes"] == 1
    assert setup["copy.128x7.graph32"]["nodes"] == 32
    for shape in ("64x128", "16x1001"):
        for l2 in ("warm", "cold"):
            assert {f"graph.fused_plain_over_copy.{shape}.{l2}", f"graph.fused_rms_over_copy.{shape}.{l2}",
                    f"graph.cudnn_over_fused_plain.{shape}.{l2}"} <= set(headline)
    assert summaries["dram"]["64x128"]["contenders"]["row4"]["read_bytes"] > 0
    assert (writer.path / SAMPLES_FILE).exists() and (writer.path / "profiles/ncu_64x128.json").exists()


def test_a_row_added_to_the_declaration_reaches_every_output(tmp_path, monkeypatch):
    """One more row (the fused plain kernel under a new name) and nothing else: it is timed at the fixed shapes and
    in the sweep, profiled and sanitized, and it appears in the summaries' tables, the submission table and the
    page's tables."""
    pytest.importorskip("pandas")
    from launchlab.chapters.fusion import page

    again = dataclasses.replace(fusion.row("fused_plain"), name="fused_plain_again", label="fused plain, again")
    monkeypatch.setattr(fusion, "ROWS", fusion.ROWS + (again,))
    session, writer, asked, summaries, _ = run_on_fakes(tmp_path, monkeypatch)
    measured = {s["variant"] for s in session.samples}
    assert {f"fused_plain_again.{shape}.{submission}" for shape in ("64x128", "16x1001")
            for submission in ("stream", "graph", "graph32")} <= measured                     # the fixed shapes
    assert {"fused_plain_again.128x7.graph32", "fused_plain_again.128x7.stream",
            "fused_plain_again.128x100.graph32", "fused_plain_again.128x100.stream"} <= measured  # the sweep
    assert asked["ncu"][0][3][-1] == "fused_plain_again"                                         # the profile
    assert "fused_plain_again" in summaries["contenders"]
    for shape in ("64x128", "16x1001"):
        assert set(summaries["device"]["fused_plain_again"][shape]) == {"warm", "cold"}
        assert set(summaries["ratios"]["graph"]["fused_plain_again_over_copy"][shape]) == {"warm", "cold"}
        assert set(summaries["ratios"]["submission"]["fused_plain_again_stream_over_graph"][shape]) == {"warm", "cold"}
    for point in summaries["sweep"]["128"]:
        assert set(point["device_us"]["fused_plain_again"]) == {"warm", "cold"}
    for point in summaries["plane"]["points"]:                                                    # the plane
        assert set(point["device_us"]["fused_plain_again"]) == {"warm", "cold"}
    run = open_run(writer.path, require_sealed=False)
    for table in (page.device_table, page.copy_ratio_table, page.submission_table, page.host_table, page.pacing_table):
        assert "fused plain, again" in set(table(run).raw.iloc[:, :2].astype(str).stack()), table.__name__
    page.page_values(run)
    page.sweep_figure(run, "128")
