"""Specification of :func:`fedmosaic.report.to_markdown.to_markdown`."""

from fedmosaic.report.document import Code, Document, Heading, Image, Paragraph, Table
from fedmosaic.report.to_markdown import to_markdown


def test_each_block_kind_has_its_markdown_form() -> None:
    # Prepare
    document = Document(
        title="fedavg-digits",
        blocks=(
            Paragraph("FedAvg on digits"),
            Heading("Final metrics"),
            Table(header=("Run", "accuracy"), rows=(("FedAvg", "0.930"), ("Local", "0.600 ± 0.050"))),
            Image(path="plots/curve_accuracy.png", caption="accuracy per round", png=b"\x89PNG"),
            Code(text='{\n  "seed": 0\n}', language="json"),
        ),
    )

    # Execute
    markdown = to_markdown(document)

    # Assert
    assert markdown == (
        "# fedavg-digits\n"
        "\n"
        "FedAvg on digits\n"
        "\n"
        "## Final metrics\n"
        "\n"
        "| Run | accuracy |\n"
        "| --- | --- |\n"
        "| FedAvg | 0.930 |\n"
        "| Local | 0.600 ± 0.050 |\n"
        "\n"
        "![accuracy per round](plots/curve_accuracy.png)\n"
        "\n"
        "```json\n"
        "{\n"
        '  "seed": 0\n'
        "}\n"
        "```\n"
    )


def test_text_that_markdown_would_read_as_markup_is_escaped() -> None:
    # Prepare
    document = Document(
        title="#1 *run*",
        blocks=(
            Paragraph("2 replies < min_replies [3]"),
            Table(header=("a|b",), rows=(("line one\nline two",),)),
        ),
    )

    # Execute
    markdown = to_markdown(document)

    # Assert
    assert markdown.splitlines() == [
        r"# \#1 \*run\*",
        "",
        r"2 replies \< min\_replies \[3\]",
        "",
        r"| a\|b |",
        "| --- |",
        "| line one line two |",
    ]


def test_code_fences_are_longer_than_any_backtick_run_in_the_code() -> None:
    # Prepare
    document = Document(title="t", blocks=(Code(text="a ```` b", language=""),))

    # Execute
    markdown = to_markdown(document)

    # Assert
    assert markdown.endswith("`````\na ```` b\n`````\n")
