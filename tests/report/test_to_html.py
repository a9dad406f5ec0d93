"""Specification of :func:`fedmosaic.report.to_html.to_html`."""

import base64
import re

from fedmosaic.report.document import Code, Document, Heading, Image, Paragraph, Table
from fedmosaic.report.to_html import to_html

PNG = b"\x89PNG\r\n\x1a\nnot really an image"


def _document(text: str) -> Document:
    """A document holding ``text`` in every block kind."""
    return Document(
        title=text,
        blocks=(
            Heading(text),
            Paragraph(text),
            Table(header=(text,), rows=((text,),)),
            Image(path="plots/x.png", caption=text, png=PNG),
            Code(text=text, language="json"),
        ),
    )


def test_text_is_escaped_in_every_block_kind() -> None:
    # Prepare
    text = "<script>alert(\"x\")</script> & 'q'"

    # Execute
    html = to_html(_document(text))

    # Assert
    assert "<script" not in html
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;"
    assert html.count(escaped) == 9  # title, h1, h2, p, th, td, alt, figcaption, code
    assert f'alt="{escaped}"' in html
    assert f'<code class="language-json">{escaped}</code>' in html


def test_images_are_embedded_as_data_uris() -> None:
    # Execute
    html = to_html(_document("x"))

    # Assert
    sources = re.findall(r'<img src="([^"]*)"', html)
    assert len(sources) == 1
    prefix = "data:image/png;base64,"
    assert sources[0].startswith(prefix)
    assert base64.b64decode(sources[0].removeprefix(prefix)) == PNG


def test_the_page_loads_nothing_from_elsewhere() -> None:
    # Execute
    html = to_html(_document("x"))

    # Assert
    assert html.startswith("<!DOCTYPE html>\n")
    assert "<style>" in html
    assert not re.search(r"(src|href)=", html.replace('<img src="data:', "<img "))
    assert "<link" not in html
    assert "http" not in html
