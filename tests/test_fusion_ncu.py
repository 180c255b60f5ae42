"""Chapter 3's Nsight Compute output on the CPU: the CSV's units, DRAM bytes attributed by the marker kernels, and the
child process the chapter starts."""
import json
from pathlib import Path

import pytest

from launchlab.chapters import fusion
from launchlab.chapters.fusion.summary import by_variant
from launchlab.gpu import ncu
from launchlab.chapters.fusion import profile
from launchlab.gpu.ncu import parse_ncu_csv

from fusion_fakes import H200, NCU_CSV, NCU_KERNELS


def test_ncu_csv_is_parsed_with_units():
    rows = parse_ncu_csv(NCU_CSV)
    assert len(rows) == 2 * len(NCU_KERNELS)
    by_id = {(r["id"], r["metric"]): r for r in rows}
    assert by_id[(4, "dram__bytes_read.sum")]["bytes"] == 67108864                  # thousands separators
    assert by_id[(6, "dram__bytes_read.sum")]["bytes"] == pytest.approx(67108864)   # Mbyte
    assert by_id[(12, "dram__bytes_read.sum")]["kernel"] == "void cudnn::softmax_fw_kernel<float>"
    assert parse_ncu_csv("==ERROR== Failed to initialize the profiler\n") == []


def test_ncu_dram_bytes_are_attributed_by_the_markers():
    rows = parse_ncu_csv(NCU_CSV)
    order = profile.ORDER_BEFORE_RECORDED
    assert order == ("copy", "row4", "fused_rms", "fused_plain", "cudnn")   # the rows a run before the copy kernel had
    assert fusion.rows_entering("profile") == ["copy", "copy4", "row4", "fused_rms", "fused_plain", "cudnn"]
    by_variant = ncu.dram_by_marker(rows, order)
    assert list(by_variant) == ["copy", "row4", "fused_rms", "cudnn"]  # fused plain launched nothing: left out
    assert by_variant["copy"] == {"read_bytes": 67108864, "write_bytes": 67108864, "kernels": 1}  # not the fixture's
    assert by_variant["row4"] == {"read_bytes": 4 * 67108864, "write_bytes": 1024 + 2 * 67108864, "kernels": 4}
    assert by_variant["fused_rms"] == {"read_bytes": 67108864, "write_bytes": 60000000, "kernels": 1}
    assert by_variant["cudnn"] == {"read_bytes": 3 * 33554432, "write_bytes": 2 * 33554432, "kernels": 2}
    assert ncu.dram_by_marker(list(reversed(rows)), order) == by_variant  # by kernel ID, not by line order
    assert profile.MARKER == "empty_kernel"
    assert list(ncu.dram_by_marker(rows, ["copy", "row4"])) == ["copy", "row4"]  # the recorded order names the rows


def test_ncu_without_markers_attributes_nothing():
    order = profile.ORDER_BEFORE_RECORDED
    unmarked = [r for r in parse_ncu_csv(NCU_CSV) if r["kernel"] != profile.MARKER]
    assert ncu.dram_by_marker(unmarked, order) == {}
    first = [r for r in parse_ncu_csv(NCU_CSV) if r["id"] <= 2]  # the target stopped after the copy: no closing marker
    assert ncu.dram_by_marker(first, order) == {}
    assert ncu.dram_by_marker([], order) == {}


def test_ncu_runs_the_chapter_child_with_the_plan_and_the_rows(monkeypatch, tmp_path):
    import subprocess
    import sys

    plan = fusion.fused_plan(4096, 128, H200)
    ran = []

    def fake_run(command, **options):
        ran.append(command)
        Path(command[command.index("--log-file") + 1]).write_text(NCU_CSV)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(ncu, "find_ncu", lambda: "/opt/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run)
    result = profile.dram_bytes(4096, 128, plan, ["copy", "fused_rms"])
    command = ran[0]
    assert command[:3] == ["/opt/ncu", "--clock-control", "none"] and "--csv" in command
    assert command[command.index("--metrics") + 1] == "dram__bytes_read.sum,dram__bytes_write.sum"
    assert command[-7:-1] == [sys.executable, "-m", "launchlab.chapters.fusion.profile", "4096", "128",
                              json.dumps(plan, sort_keys=True)]
    assert command[-1] == "copy,fused_rms" and result["order"] == ["copy", "fused_rms"]
    assert result["csv"] == NCU_CSV and result["error"] is None
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    assert profile.dram_bytes(1, 2, plan, ["copy"])["error"] == "ncu (Nsight Compute) is not on this host"
