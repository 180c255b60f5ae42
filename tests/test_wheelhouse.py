"""tools/wheelhouse.py's pure parts: names, host lists, versions and the walk that decides which wheels a GPU host
needs. No network: wheels are fake file names and requirement lists. One slow test executes a notebook with the
packages the wheelhouse leaves out made unimportable, as on the GPU host."""
import importlib.util
import os
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "wheelhouse.py"
_spec = importlib.util.spec_from_file_location("wheelhouse", TOOL)
wh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wh)

ENV = wh.target_environment("3.12", "manylinux_2_28_x86_64")


@pytest.mark.parametrize("name, expected", [
    ("jupyter_client", "jupyter-client"), ("Jupyter.Client", "jupyter-client"), ("myst-nb", "myst-nb"),
    ("PyYAML", "pyyaml"), ("typing__extensions", "typing-extensions"), ("zope.interface", "zope-interface")])
def test_normalize(name, expected):
    assert wh.normalize(name) == expected


def test_host_list_with_and_without_versions():
    lines = ["# a comment", "", "numpy==2.5.2", "PyYAML == 6.0.2", "typing_extensions", "torch==2.11.0+cu130",
             "mylib @ file:///src/mylib", "-e git+https://example.org/x.git#egg=x", "ruamel.yaml==0.18.6"]
    assert wh.read_host_packages(lines) == {
        "numpy": "2.5.2", "pyyaml": "6.0.2", "typing-extensions": None, "torch": "2.11.0+cu130", "mylib": None,
        "ruamel-yaml": "0.18.6"}


def test_committed_host_list_reads():
    host = wh.read_host_packages(wh.HOST_LIST.read_text().splitlines())
    assert {"numpy", "pyyaml", "typing-extensions", "huggingface-hub", "jax-cuda13-plugin"} <= host.keys()
    assert host["numpy"] and host["cupy-cuda13x"]  # a versioned `pip freeze` of the H200 image


def test_wheel_project_and_newest_version():
    files = ["jupyter_client-8.6.3-py3-none-any.whl", "jupyter_client-8.10.0-py3-none-any.whl",
             "pyzmq-27.3.0-cp312-abi3-manylinux_2_26_x86_64.manylinux_2_28_x86_64.whl",
             "Tornado-6.5rc1-1-cp39-abi3-manylinux_2_17_x86_64.whl", "tornado-6.4.2-cp38-abi3-manylinux1_x86_64.whl"]
    assert wh.wheel_project(files[2]) == ("pyzmq", "27.3.0")
    # 8.10 is newer than 8.6 (not a string comparison), and a release candidate beats an older final release.
    assert wh.newest_per_project(files) == {"jupyter-client": files[1], "pyzmq": files[2], "tornado": files[3]}


REQUIRES = {  # project -> Requires-Dist, as a fake download would give
    "papermill": ['aiohttp>=3.9; python_version == "3.12"', "nbclient>=0.2", "PyYAML", "entrypoints"],
    "nbclient": ["jupyter-client>=7", "traitlets>=5.13"],
    "jupyter-client": ["traitlets", 'typing-extensions>=4.13; python_version < "3.11"', "pyzmq>=25"],
    "traitlets": ['argcomplete>=3; extra == "test"'],
    "pyzmq": ['cffi; implementation_name == "pypy"'],
    "myst-nb": ["sphinx>=5", "ipython[black]", "nbclient"],
    "ipython": ['colorama; sys_platform == "win32"', 'black; extra == "black"'],
    "black": [], "entrypoints": [],
    "sphinx": ["babel>=2.13"], "babel": [],
    "typing-extensions": [], "argcomplete": [],
}
HOST = {"aiohttp": None, "pyyaml": "6.0.2", "cffi": None}


def test_walk_keeps_what_the_target_needs_and_the_host_lacks():
    kept, gaps = wh.walk(["papermill", "myst_nb"], REQUIRES, HOST, {"sphinx"}, ENV)
    # aiohttp and PyYAML come from the host; typing-extensions is for Python < 3.11 only, argcomplete for an extra
    # nobody asked for, cffi for PyPy; sphinx is skipped, and babel with it; black comes with ipython[black].
    assert kept == {"papermill", "nbclient", "jupyter-client", "traitlets", "pyzmq", "entrypoints", "myst-nb",
                    "ipython", "black"}
    assert gaps == []


def test_walk_reports_requirements_nobody_meets():
    kept, gaps = wh.walk(["papermill"], REQUIRES, {"pyyaml": None}, set(), ENV)
    # On 3.12 papermill needs aiohttp; without it on the host that is a gap (pip run under 3.11 misses it).
    assert gaps == [("papermill", 'aiohttp>=3.9; python_version == "3.12"')]
    assert "aiohttp" not in kept
    # Under 3.10 the same tree needs the backport instead, and no aiohttp.
    kept, gaps = wh.walk(["papermill"], REQUIRES, {"pyyaml": None}, set(), wh.target_environment("3.10", "x86_64"))
    assert "typing-extensions" in kept and gaps == []


def test_walk_does_not_follow_into_host_packages():
    # The host's own packages bring their dependencies; none of theirs is downloaded or reported.
    kept, gaps = wh.walk(["myst-nb"], REQUIRES, {**HOST, "sphinx": None, "nbclient": None}, set(), ENV)
    assert kept == {"myst-nb", "ipython", "black"} and gaps == []


def test_walk_leaves_out_what_only_a_prompt_or_a_debugger_imports():
    requires = {**REQUIRES, "ipython": ["jedi>=0.18", 'colorama; sys_platform == "win32"'], "jedi": ["parso>=0.8"],
                "parso": [], "ipykernel": ["debugpy>=1.6", "ipython"], "debugpy": []}
    kept, gaps = wh.walk(["ipykernel"], requires, HOST, wh.BUILD_ONLY | wh.RUNTIME_OPTIONAL, ENV)
    # parso goes with jedi, which alone requires it
    assert kept == {"ipykernel", "ipython"} and gaps == []
    kept, _ = wh.walk(["ipykernel"], requires, HOST, wh.BUILD_ONLY, ENV)  # what --full keeps
    assert {"jedi", "parso", "debugpy"} <= kept


@pytest.mark.slow
def test_a_notebook_executes_and_glues_without_the_packages_left_out(tmp_path, monkeypatch):
    """What the GPU host gets: papermill runs a kernel that imports neither jedi nor debugpy, and glue works. Each is
    shadowed by a package whose import fails, on the kernel's path."""
    papermill = pytest.importorskip("papermill")
    nbformat = pytest.importorskip("nbformat")
    blocked = tmp_path / "blocked"
    for name in sorted(wh.RUNTIME_OPTIONAL):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('{name} is left out of the wheelhouse')\n")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(
        "import importlib, sys\n"
        f"for name in {sorted(wh.RUNTIME_OPTIONAL)!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "        raise SystemExit(f'{name} imported')\n"
        "    except ImportError:\n"
        "        pass\n"
        "from myst_nb import glue\n"
        "glue('answer', 42, display=False)\n"
        "print('executed')")]
    source, executed = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(notebook, source)
    monkeypatch.setenv("PYTHONPATH", str(blocked), prepend=os.pathsep)  # the kernel inherits it
    papermill.execute_notebook(str(source), str(executed), kernel_name="python3", progress_bar=False)
    outputs = nbformat.read(executed, as_version=4).cells[0].outputs
    assert any("executed" in o.get("text", "") for o in outputs)
