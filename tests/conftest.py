"""Shared test set-up: the `gpu` marker skips with the stated reason where no GPU is visible."""
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))

from launchlab.gpu.device import gpu_status# noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU visible to CuPy")


def pytest_collection_modifyitems(config, items):
    available, detail = gpu_status()
    if available:
        return
    skip = pytest.mark.skip(reason=f"no GPU visible: {detail}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
