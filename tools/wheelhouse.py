#!/usr/bin/env python3
"""Download an offline wheelhouse of the notebook-execution packages for a GPU host that has no network.

The GPU hosts (Python 3.12, x86_64, manylinux) lack papermill, nbclient, nbformat, ipykernel, jupyter_client and
myst-nb (chapters call `from myst_nb import glue`), but hold numpy, matplotlib, pandas, pyyaml and much more.
This script lets pip resolve those packages for the host's Python and platform, then keeps only the wheels the
host needs and lacks, one version per project, in DEST (default `.whl`, git-ignored), which travels with a run and
installs there with `--no-index --no-deps` (printed at the end).

Why the script walks the requirements itself instead of trusting pip's download list:
- pip evaluates environment markers against the interpreter running it, not the target (`--python-version` only
  filters wheels), so run under 3.11 it fetches 3.11-only backports and skips 3.12-only requirements. The walk
  below evaluates every `Requires-Dist` marker for the target, drops what the target does not need and reports
  any requirement that neither the wheelhouse nor the host satisfies (exit status 2).
- It stops at packages the host already has (PEP 503 names), at myst-nb's build side (BUILD_ONLY), and at the
  packages that executing a notebook never imports (RUNTIME_OPTIONAL).

`packaging` (a dependency of pytest and of nearly every environment with pip) parses markers and versions.

    python tools/wheelhouse.py [--python-version 3.12] [--platform TAG ...] [--host-packages FILE]
                               [--dest .whl] [--force] [--full]
"""
from __future__ import annotations

import argparse
import email
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

# docutils is named because glue imports it (through myst_nb.core) while myst-nb requires it only through its
# build side, which is left out below.
ROOTS = ["papermill", "nbclient", "nbformat", "ipykernel", "jupyter_client", "myst-nb", "docutils"]
# myst-nb's build side: its Sphinx extension, parser and execution cache. A kernel that calls glue imports none
# of them (glue needs IPython, nbformat and docutils), and they bring Sphinx and Babel (~15 MB) and SQLAlchemy
# (~5 MB). The book is built where the requirements are installed normally, never on the GPU host. --full keeps them.
BUILD_ONLY = {"sphinx", "myst-parser", "jupyter-cache"}
# Required by their packages' metadata, imported by neither when a notebook executes: IPython imports jedi (and
# through it parso) only to complete a name at the prompt, after checking that it is installed, and ipykernel
# imports debugpy only for its debugger, inside a try that falls back when it is missing. Together about 9 MiB,
# of wheels that every GPU call carries. --full keeps them.
RUNTIME_OPTIONAL = {"jedi", "debugpy"}
# pip matches platform tags literally, so every manylinux tag the host accepts is named: glibc 2.5 up to the
# host's (Ubuntu 24.04's 2.39 on the H200 image), newest first so pip prefers the newest build, plus legacy aliases.
DEFAULT_PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(39, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
HOST_LIST = Path(__file__).resolve().parent / "hosts" / "h200-cuda-image.txt"


def normalize(name: str) -> str:
    """PEP 503 project name: case-folded, runs of '-', '_' and '.' as one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_host_packages(lines) -> dict[str, str | None]:
    """{normalised name: version or None} from `pip freeze`/`pip list --format=freeze` lines or bare names.
    Comments, blank lines, editable installs and pip's own notices are skipped; `name @ url` keeps no version."""
    host = {}
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([^\s;#]+))?", line)
        if m and not line.lstrip().startswith(("#", "-")):
            host[normalize(m.group(1))] = m.group(2)
    return host


def wheel_project(filename: str) -> tuple[str, str]:
    """(normalised project, version) of a wheel file name `{name}-{version}(-{build})?-{py}-{abi}-{plat}.whl`."""
    name, version = Path(filename).name.split("-")[:2]
    return normalize(name), version


def newest_per_project(filenames) -> dict[str, str]:
    """{project: file name of its newest wheel}: two versions of one project in a --no-deps install would clash."""
    best = {}
    for f in filenames:
        project, version = wheel_project(f)
        if project not in best or Version(version) > Version(wheel_project(best[project])[1]):
            best[project] = f
    return best


def target_environment(python_version: str, platform: str) -> dict[str, str]:
    """Marker variables of the target interpreter (CPython on Linux), for PEP 508 marker evaluation."""
    machine = re.search(r"(x86_64|aarch64|ppc64le|s390x|i686)$", platform).group(1)
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": machine}


def walk(roots, requires: dict[str, list[str]], host, skip, env) -> tuple[set[str], list[tuple[str, str]]]:
    """Projects of the wheelhouse needed by `roots` on the target, and the unmet requirements.

    requires: {project: its Requires-Dist strings} for every downloaded project. A requirement is met by the host
    (not followed further: the host's packages bring their own), by a skipped project, or by a downloaded one,
    whose requirements are followed under the extras asked for. Returns (kept projects, [(requirer, requirement)])."""
    kept, gaps, seen = set(), [], set()
    todo = [(None, Requirement(r)) for r in roots]
    while todo:
        requirer, req = todo.pop()
        project = normalize(req.name)
        if project in host or project in skip:
            continue
        if project not in requires:
            gaps.append((requirer or "(root)", str(req)))
            continue
        kept.add(project)
        for extra in {""} | req.extras:
            if (project, extra) in seen:
                continue
            seen.add((project, extra))
            for spec in requires[project]:
                dep = Requirement(spec)
                if dep.marker is None or dep.marker.evaluate({**env, "extra": extra}):
                    todo.append((project, dep))
    return kept, gaps


def requires_dist(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist entries, from its dist-info METADATA (an RFC 822 style header block)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        return email.message_from_bytes(z.read(meta)).get_all("Requires-Dist") or []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-version", default="3.12")
    ap.add_argument("--platform", action="append", help="wheel platform tag, repeatable (default: manylinux x86_64)")
    ap.add_argument("--host-packages", type=Path, default=HOST_LIST,
                    help="the host's `pip freeze` (name==version lines) or a list of names (default: %(default)s)")
    ap.add_argument("--dest", type=Path, default=Path(".whl"))
    ap.add_argument("--force", action="store_true", help="replace the wheels of a non-empty DEST")
    ap.add_argument("--full", action="store_true", help="keep myst-nb's build side (Sphinx, its parser, cache) and "
                    "the packages only a prompt or a debugger imports (jedi, debugpy)")
    args = ap.parse_args(argv)
    platforms = args.platform or DEFAULT_PLATFORMS

    if args.dest.is_dir() and any(args.dest.iterdir()):
        if not args.force:
            sys.exit(f"{args.dest} is not empty; pass --force to replace its wheels")
        for old in args.dest.glob("*.whl"):
            old.unlink()
    host = read_host_packages(args.host_packages.read_text().splitlines())

    with tempfile.TemporaryDirectory() as tmp:
        # Host versions, where known, constrain the resolution, so that what is downloaded works with them.
        constraints = Path(tmp, "host-constraints.txt")
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in host.items() if v))
        download = Path(tmp, "download")
        pip = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
                              "--python-version", args.python_version, "--implementation", "cp",
                              *[f"--platform={p}" for p in platforms], "-c", str(constraints),
                              "-d", str(download), *ROOTS])
        if pip.returncode:
            sys.exit("pip download failed (see above)")
        wheels = {p: download / f for p, f in newest_per_project(f.name for f in download.glob("*.whl")).items()}
        env = target_environment(args.python_version, platforms[0])
        skip = set() if args.full else BUILD_ONLY | RUNTIME_OPTIONAL
        kept, gaps = walk(ROOTS, {p: requires_dist(w) for p, w in wheels.items()}, host, skip, env)
        args.dest.mkdir(parents=True, exist_ok=True)
        for project in sorted(kept):
            shutil.copy2(wheels[project], args.dest)

    total = 0
    for project in sorted(kept):
        size = (args.dest / wheels[project].name).stat().st_size
        total += size
        print(f"{size / 2**20:8.2f} MiB  {wheels[project].name}")
    print(f"{total / 2**20:8.2f} MiB  in {len(kept)} wheels")
    left = sorted(set(wheels) - kept)
    print("left out, the host has them:", " ".join(p for p in left if p in host) or "-")
    print("left out, not needed on the target (markers"
          + ("" if args.full else ", myst-nb's build side, what only a prompt or a debugger imports") + "):",
          " ".join(p for p in left if p not in host) or "-")
    print(f"install on the host:\n  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "
          f"{args.dest}/*.whl && export PYTHONPATH=/tmp/site:$PYTHONPATH")
    for requirer, req in gaps:
        print(f"MISSING: {requirer} requires {req}: neither in the wheelhouse nor on the host", file=sys.stderr)
    return 2 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
