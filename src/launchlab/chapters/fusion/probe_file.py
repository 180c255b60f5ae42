"""A committed development probe's result, as the fusion page's probe readers (phase_floor.py, pipelined_probe.py,
triton_layout.py) load it: the file must exist and hold something the page can quote."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable


def read_probe(path: Path, what: str, maker: str, usable: Callable[[dict], object], lacking: str) -> dict:
    """The JSON at `path`; FileNotFoundError naming `what` and the tool that makes it (`maker`) where it is missing,
    ValueError saying what it `lacking` where usable(data) is empty."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: {what} is missing ({maker} makes it)")
    data = json.loads(path.read_text())
    if not usable(data):
        raise ValueError(f"{path}: {lacking}")
    return data
