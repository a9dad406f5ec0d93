"""Render a :class:`~fedmosaic.report.document.Document` as Markdown."""

import re

from fedmosaic.report.document import Block, Code, Document, Heading, Image, Paragraph, Table

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def to_markdown(document: Document) -> str:
    """Return ``document`` as CommonMark with GitHub tables.

    Images are linked by their relative path; the caller writes them there.

    Parameters
    ----------
    document : Document
        What to render.

    Returns
    -------
    str
        The Markdown text, ending with a newline.
    """
    parts = [f"# {_escape(document.title)}", *(_block(block) for block in document.blocks)]
    return "\n\n".join(parts) + "\n"


def _escape(text: str) -> str:
    """Backslash-escape the characters that Markdown would read as markup."""
    return _SPECIAL.sub(r"\\\1", text)


def _row(cells: tuple[str, ...]) -> str:
    """Return one table row; newlines in cells become spaces."""
    return "| " + " | ".join(_escape(cell).replace("\n", " ") for cell in cells) + " |"


def _fence(text: str) -> str:
    """Return a backtick fence longer than any run of backticks in ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _block(block: Block) -> str:
    """Return one block as Markdown."""
    match block:
        case Heading(text):
            return f"## {_escape(text)}"
        case Paragraph(text):
            return _escape(text)
        case Table(header, rows):
            rule = "| " + " | ".join("---" for _ in header) + " |"
            return "\n".join([_row(header), rule, *(_row(row) for row in rows)])
        case Image(path, caption):
            return f"![{_escape(caption)}]({path})"
        case Code(text, language):
            fence = _fence(text)
            return f"{fence}{language}\n{text}\n{fence}"
