"""Sphinx extension for the book (listed in _config.yml, `sphinx.extra_extensions`).

Each inline script is emitted once. Sphinx 7 (which jupyter-book 1 requires) registers an inline script added by
`app.add_js_file(None, body=...)` after the builder started twice: in the builder as `_JavaScript(None)` and, when
pages are written, again from the registry as `_JavaScript('')`. The two compare unequal, so every page carried
sphinx-thebe's `const THEBE_JS_URL = ...` twice (the browser's console: "SyntaxError: Identifier 'THEBE_JS_URL' has
already been declared") and sphinx-togglebutton's selector twice. Before pages are written, the builder's inline
scripts are given the filename '' the registry's copy will carry, so the second copy is recognised as present.

Kernels run encrypted. ipykernel 7 warns "Kernel is running over TCP without encryption" once per notebook when
its connection file names the tcp transport without CurveZMQ keys. jupyter_client (8.10) provisions those keys
when `KernelManager.transport_encryption` is "auto" and the kernelspec declares `supported_encryption: curve`
(ipykernel 7's does), but myst-nb executes through jupyter-cache and nbclient, which create the kernel manager with
an empty traitlets config, so no config file reaches it. The policy's default is therefore set to "auto" here, for
the kernels this build starts; the warning disappears because the channel is encrypted, not because a log is
filtered. A pyzmq without CurveZMQ support, or a kernelspec that does not declare it, leaves the default alone.

The evidence is verified once, when the builder starts (what `python -m launchlab verify` checks: every run's
manifest and hashes, that its JSON and gzip files decode, and accepted.json). A broken file stops the build with
one error naming it; left to the notebooks, it surfaced as one cell failure among every page's warnings.
"""
from __future__ import annotations


def _unify_inline_scripts(app, env) -> None:
    from sphinx.builders.html._assets import _JavaScript

    builder = app.builder
    scripts = getattr(builder, "_js_files", None)
    if scripts is None:
        return
    unified = []
    for script in scripts:
        if script.filename is None:
            script = _JavaScript("", priority=script.priority, **script.attributes)
        if script not in unified:
            unified.append(script)
    scripts[:] = unified


def encrypt_kernel_transport() -> bool:
    """Kernel managers created from now on (in this process) provision CurveZMQ keys for kernels that support
    them. Returns whether the policy was set."""
    import zmq
    from jupyter_client.manager import KernelManager

    trait = KernelManager.class_traits().get("transport_encryption")
    if trait is None or not zmq.has("curve"):
        return False
    trait.default_value = "auto"
    return True


def check_evidence(root) -> None:
    """Raise one ExtensionError naming the first broken file of the evidence store at `root` (and how many)."""
    from sphinx.errors import ExtensionError

    from launchlab.store import evidence

    try:
        problems = evidence.verify(root)
    except evidence.EvidenceError as error:
        raise ExtensionError(f"the evidence cannot be read: {error}") from None
    if problems:
        raise ExtensionError(f"the evidence does not verify: {problems[0]} ({len(problems)} problem(s); "
                             "`python -m launchlab verify` lists them all)")


def _check_evidence(app) -> None:
    from launchlab.store import evidence

    check_evidence(evidence.EVIDENCE_ROOT)


def setup(app):
    app.connect("builder-inited", _check_evidence)
    app.connect("env-updated", _unify_inline_scripts)
    encrypt_kernel_transport()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
