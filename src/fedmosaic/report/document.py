"""A minimal document model, rendered both as Markdown and as HTML.

The report's content is built once as a :class:`Document`; the writers in
:mod:`fedmosaic.report.to_markdown` and :mod:`fedmosaic.report.to_html` only
decide how each block looks. Text in blocks is plain: writers escape it.
"""

import re
from dataclasses import dataclass

PLOTS_DIR = "plots"
"""Folder, relative to the report, that holds its images."""


@dataclass(frozen=True)
class Heading:
    """A section heading."""

    text: str


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells.

    Attributes
    ----------
    header : tuple[str, ...]
        Column titles.
    rows : tuple[tuple[str, ...], ...]
        Cells, one tuple per row, as many as there are columns.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Image:
    """A PNG image.

    Attributes
    ----------
    path : str
        Where the image is written, relative to the report, with ``/``.
    caption : str
        Short description, also used as alternative text.
    png : bytes
        The image itself.
    """

    path: str
    caption: str
    png: bytes


def plot_image(name: str, caption: str, png: bytes) -> Image:
    """Return an image stored as ``name`` under :data:`PLOTS_DIR`, its file name made safe.

    Examples
    --------
    >>> plot_image("top-1 acc/val", "accuracy", b"").path
    'plots/top-1_acc_val.png'
    """
    return Image(f"{PLOTS_DIR}/{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png", caption, png)


@dataclass(frozen=True)
class Code:
    """A block of preformatted text.

    Attributes
    ----------
    text : str
        The code, shown verbatim.
    language : str
        Language hint for syntax highlighting, e.g. ``"json"``.
    """

    text: str
    language: str


Block = Heading | Paragraph | Table | Image | Code


@dataclass(frozen=True)
class Document:
    """A titled sequence of blocks.

    Attributes
    ----------
    title : str
        The document's title, shown once at its top.
    blocks : tuple[Block, ...]
        The content, in reading order.
    """

    title: str
    blocks: tuple[Block, ...]

    @property
    def images(self) -> tuple[Image, ...]:
        """The document's images, in reading order."""
        return tuple(block for block in self.blocks if isinstance(block, Image))
