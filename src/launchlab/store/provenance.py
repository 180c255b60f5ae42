"""Which code made a run: the git commit and a hash of the source tree itself.

The GPU host may receive a copy of the working tree without .git, so the commit can also come
from LAUNCHLAB_GIT_COMMIT; the tree hash needs neither. A commit read from git gains the suffix
`+worktree` when kernels/ or src/launchlab/ differ from it. `source_tree_sha256_at(commit)`
recomputes the hash from git's copy of a commit, so acceptance can prove which code a run used.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
SOURCE_DIRS = ("kernels", "src/launchlab")
WORKTREE_SUFFIX = "+worktree"


def _git(*args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, timeout=30)
    except OSError:
        return None


def git_commit() -> str | None:
    if os.environ.get("LAUNCHLAB_GIT_COMMIT"):
        return os.environ["LAUNCHLAB_GIT_COMMIT"]
    head = _git("rev-parse", "--short", "HEAD")
    if head is None or head.returncode != 0:
        return None
    commit = head.stdout.decode().strip()
    dirty = _git("status", "--porcelain", "--", *SOURCE_DIRS)
    return commit + WORKTREE_SUFFIX if dirty is not None and dirty.stdout.strip() else commit


def _digest(files) -> str:
    digest = hashlib.sha256()
    for relative, data in sorted(files):
        digest.update(relative.encode() + b"\0" + data)
    return digest.hexdigest()


def source_tree_sha256() -> str:
    """SHA-256 over the paths and bytes of every file in kernels/ and src/launchlab/."""
    files = []
    for directory in SOURCE_DIRS:
        for path in (REPO_ROOT / directory).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".egg-info"):
                files.append((path.relative_to(REPO_ROOT).as_posix(), path.read_bytes()))
    return _digest(files)


def source_tree_sha256_at(commit: str) -> str | None:
    """The same hash over git's copy of `commit` (None where git or the commit is unavailable)."""
    archive = _git("archive", "--format=tar", commit, "--", *SOURCE_DIRS)
    if archive is None or archive.returncode != 0:
        return None
    files = []
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            if member.isfile() and "__pycache__" not in member.name:
                files.append((member.name, tar.extractfile(member).read()))
    return _digest(files)
