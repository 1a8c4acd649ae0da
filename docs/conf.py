"""Sphinx configuration of the mpiucc docs: MyST Markdown pages, an API reference from the
docstrings, built with warnings as errors (``make docs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

project = "mpiucc"
copyright = "the mpiucc authors"
release = "0.1.0"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"

myst_heading_anchors = 4  # [text](page.md#a-heading) links, as GitHub makes them
autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "furo"
html_title = "mpiucc"


# The root files included as pages (ARCHITECTURE.md, BENCHMARKS.md, RELIABILITY.md,
# codecs/FORMAT.md) are pages of the same names here, so their links to each other resolve.
# Their links to other files of the repository (a test's README, a source file) render as the
# file's path: the site does not hold those files.
REPO = Path(__file__).resolve().parent.parent


class RepositoryFileLinks(SphinxPostTransform):
    default_priority = 5  # before MyST resolves its references (priority 9)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "").split("#")[0]
            if node.get("reftype") != "myst" or not target or target in self.env.found_docs:
                continue
            if (REPO / target).exists():
                node.replace_self(nodes.literal(target, node.astext() or target))


def setup(app: Sphinx) -> None:
    app.add_post_transform(RepositoryFileLinks)
