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

Figures say what they show and open at full size. A glued figure's PNG carries its alt text in the output's
metadata (present/figures.glue_figure); `{glue:figure}` is given the variant below, which reads it into the image's
alt when the directive names none (myst-nb's own keeps only width and height from that metadata, and Sphinx then
writes the file path as the alt). And every image inside a figure is wrapped in a link to its own file, so that on
a phone tapping a figure opens it at its drawn size (the same link Sphinx gives a scaled image).
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


def _figure_directive():
    """myst-nb's `{glue:figure}`, with the alt text from the glued image's metadata when `:alt:` is not given."""
    from myst_nb.ext.glue.directives import PasteFigureDirective
    from myst_nb.ext.glue.utils import RetrievalError, retrieve_glue_data

    class AltTextFigure(PasteFigureDirective):
        def run(self):
            if "alt" not in self.options:
                try:
                    data = retrieve_glue_data(self.document, self.arguments[0])
                except RetrievalError:
                    return super().run()      # the parent reports the missing key
                alt = next((meta.get("alt") for mime, meta in data.metadata.items()
                            if mime.startswith("image/") and isinstance(meta, dict) and meta.get("alt")), None)
                if alt:
                    self.options["alt"] = alt
            return super().run()

    return AltTextFigure


def link_figure_images(app, doctree, docname) -> None:
    """Wrap each image of a figure in a link to the image file as the built site will hold it (_images/)."""
    from docutils import nodes
    from sphinx.util.osutil import relative_uri

    images = app.builder.env.images
    target = relative_uri(app.builder.get_target_uri(docname), "_images")
    for figure in doctree.findall(nodes.figure):
        for image in list(figure.findall(nodes.image)):
            if isinstance(image.parent, nodes.reference):
                continue
            uri = next((u for u in (image["uri"], *image.get("candidates", {}).values()) if u in images), None)
            if uri is None:
                continue
            link = nodes.reference("", "", internal=True, refuri=f"{target}/{images[uri][1]}",
                                   classes=["ll-figure-link"])
            image.replace_self(link)
            link.append(image)


def setup(app):
    app.setup_extension("myst_nb")
    app.add_directive_to_domain("glue", "figure", _figure_directive(), override=True)
    app.connect("builder-inited", _check_evidence)
    app.connect("env-updated", _unify_inline_scripts)
    app.connect("doctree-resolved", link_figure_images)
    encrypt_kernel_transport()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
