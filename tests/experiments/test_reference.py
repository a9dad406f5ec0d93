"""The configuration reference is generated from the schema and committed up to date."""

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from fedmosaic.experiments.config import ClientsAtRound, FederationSection, RunSection
from fedmosaic.experiments.reference import (
    REGENERATE,
    config_tables,
    describe_default,
    describe_type,
    parameter_docs,
    render_reference,
)
from fedmosaic.methods.models import ModelParams
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.vertical.params import FalseVFLParams

DOCS = Path(__file__).resolve().parents[2] / "docs" / "experiments.md"


def _sections(text: str) -> dict[str, str]:
    """Body of each ``###`` section, by heading."""
    parts = re.split(r"\n(?=#)", text)
    return {part.partition("\n")[0].removeprefix("### "): part for part in parts if part.startswith("### ")}


def _descriptions(section: str) -> dict[str, str]:
    """The description cell of each key row of a section's table, by key."""
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in section.splitlines() if line.startswith("| `")]
    return {cells[0].strip(" `"): cells[-1].strip() for cells in rows}


def test_committed_reference_is_up_to_date() -> None:
    assert DOCS.read_text() == render_reference(), f"docs/experiments.md is stale; run: {REGENERATE}"


def test_reference_covers_every_table() -> None:
    headers = [header for table in config_tables() for header in table.headers]
    assert headers == [
        "[data]",
        "[partition]",
        "[federation]",
        "[[federation.arrivals]]",
        "[[federation.departures]]",
        "[[federation.failures]]",
        "[concepts]",
        "[vertical]",
        "[model]",
        "[train]",
        "[[runs]]",
        "[grid]",
        "[aggregation]",
        "[privacy]",
        "[attack]",
        "[tables]",
        "[[tables.sites]]",
        "[[tables.parties]]",
    ]


def test_every_key_and_method_parameter_is_described() -> None:
    sections = _sections(render_reference())
    expected = {
        ", ".join(f"`{header}`" for header in table.headers) or "Top-level keys": table.model
        for table in config_tables()
    }
    expected |= {f"`{method.name}`": method.params for method in METHODS.values()}
    for heading, model in expected.items():
        described = _descriptions(sections[heading])
        assert list(described) == list(model.model_fields), heading
        assert all(described.values()), heading
    assert "No parameters." in sections["`fedavg`"]


@pytest.mark.parametrize(
    ("model", "key", "type_text", "default"),
    [
        (FederationSection, "fraction", "float in (0, 1]", "`1.0`"),
        (FederationSection, "dropout", "float in [0, 1)", "`0.0`"),
        (FederationSection, "clients_per_round", "integer > 0", "unset"),
        (FederationSection, "arrivals", "array of tables", "`[]`"),
        (ClientsAtRound, "clients", "array of integer >= 0, non-empty", "required"),
        (RunSection, "setting", 'one of `"federated"`, `"centralized"`, `"local"`', '`"federated"`'),
        (ModelParams, "hidden", "array of integer > 0", "`[200, 200]`"),
    ],
)
def test_types_and_defaults_come_from_the_fields(
    model: type[BaseModel], key: str, type_text: str, default: str
) -> None:
    field = model.model_fields[key]
    assert describe_type(field.annotation, field.metadata) == type_text
    assert describe_default(field) == default


class _Documented(BaseModel):
    """A model.

    Parameters
    ----------
    a, b : int
        Shared ``text``.
    """

    a: int = 0
    b: int = Field(default=1, ge=0)


class _Undocumented(_Documented):
    """A model missing one field.

    Parameters
    ----------
    a, b : int
        Documented.
    """

    c: int = 0


def test_docstring_entries_are_parsed() -> None:
    assert parameter_docs(_Documented) == {"a": "Shared `text`.", "b": "Shared `text`."}


def test_an_undocumented_field_raises() -> None:
    with pytest.raises(ValueError, match="_Undocumented: no description of c"):
        parameter_docs(_Undocumented)


class _Stale(BaseModel):
    """A model documenting a field it lacks.

    Parameters
    ----------
    a : int
        Documented.
    gone : int
        No longer a field.
    """

    a: int = 0


def test_a_documented_field_that_does_not_exist_raises() -> None:
    with pytest.raises(ValueError, match="_Stale: the docstring documents gone"):
        parameter_docs(_Stale)


def test_inherited_fields_may_be_described_by_the_fedmosaic_base_class() -> None:
    docs = parameter_docs(FalseVFLParams)
    assert docs["lr"].startswith("Adam learning rate")
    assert docs["kappa"].startswith("Importance samples")
