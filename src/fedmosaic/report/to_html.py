"""Render a :class:`~fedmosaic.report.document.Document` as a self-contained HTML page.

The page needs no other file and loads nothing: its style sheet is inline and
its images are embedded as base64 ``data:`` URIs.
"""

import base64
from html import escape

from fedmosaic.report.document import Block, Code, Document, Heading, Image, Paragraph, Table

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       line-height: 1.5; margin: 0; }
main { max-width: 64rem; margin: 0 auto; padding: 1.5rem; }
h1 { border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { margin-top: 2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 1rem 0; width: 100%;
        font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .5rem; text-align: left; overflow-wrap: anywhere; }
td:first-child { overflow-wrap: break-word; }
th { background: #f6f8fa; }
tbody tr:nth-child(even) { background: #fafbfc; }
figure { margin: 1rem 0; }
img { max-width: 100%; height: auto; }
figcaption { color: #59636e; font-size: .9rem; }
pre { background: #f6f8fa; padding: 1rem; border-radius: 6px; white-space: pre-wrap;
      overflow-wrap: anywhere; }
"""


def to_html(document: Document) -> str:
    """Return ``document`` as one HTML page with everything inline.

    Parameters
    ----------
    document : Document
        What to render.

    Returns
    -------
    str
        The HTML page, ending with a newline.
    """
    title = escape(document.title)
    body = "\n".join(_block(block) for block in document.blocks)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head>\n"
        "<body>\n"
        "<main>\n"
        f"<h1>{title}</h1>\n"
        f"{body}\n"
        "</main>\n"
        "</body>\n"
        "</html>\n"
    )


def _cells(tag: str, cells: tuple[str, ...]) -> str:
    """Return one table row whose cells use ``tag`` (``th`` or ``td``)."""
    return "<tr>" + "".join(f"<{tag}>{escape(cell)}</{tag}>" for cell in cells) + "</tr>"


def _block(block: Block) -> str:
    """Return one block as HTML."""
    match block:
        case Heading(text):
            return f"<h2>{escape(text)}</h2>"
        case Paragraph(text):
            return f"<p>{escape(text)}</p>"
        case Table(header, rows):
            body = "\n".join(_cells("td", row) for row in rows)
            return f"<table>\n<thead>{_cells('th', header)}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"
        case Image(_, caption, png):
            source = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            return (
                f'<figure><img src="{source}" alt="{escape(caption)}">'
                f"<figcaption>{escape(caption)}</figcaption></figure>"
            )
        case Code(text, language):
            return f'<pre><code class="language-{escape(language)}">{escape(text)}</code></pre>'
