"""Which code made a run: the git commit and a hash of the source tree itself.

The GPU host may receive a copy of the working tree without .git, so the commit can
also come from LAUNCHLAB_GIT_COMMIT; the tree hash needs neither."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
SOURCE_DIRS = ("kernels", "src/launchlab")


def git_commit() -> str | None:
    if os.environ.get("LAUNCHLAB_GIT_COMMIT"):
        return os.environ["LAUNCHLAB_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source_tree_sha256() -> str:
    """SHA-256 over the paths and bytes of every file in kernels/ and src/launchlab/."""
    digest = hashlib.sha256()
    for directory in SOURCE_DIRS:
        for path in sorted((REPO_ROOT / directory).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
