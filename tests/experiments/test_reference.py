"""The configuration reference is generated from the schema and committed up to date."""

import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel, Field

from fedmosaic.experiments.config import ClientsAtRound, ExperimentConfig, FederationSection, RunSection
from fedmosaic.experiments.reference import (
    REGENERATE,
    config_tables,
    describe_default,
    describe_type,
    parameter_docs,
    render_reference,
)
from fedmosaic.methods.horizontal.models import ModelParams
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams

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


def _tables_in(model: type[BaseModel], prefix: str) -> list[tuple[str, type[BaseModel]]]:
    """Every table nested in ``model``, found from the fields' types: ``(dotted path, model)``, depth first."""
    found = []
    for name, field in model.model_fields.items():
        candidates = [field.annotation, *get_args(field.annotation)]
        candidates += [inner for candidate in candidates for inner in get_args(candidate)]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        for child in nested[:1]:
            found.append((f"{prefix}{name}", child))
            found += _tables_in(child, f"{prefix}{name}.")
    return found


def _headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_reference_covers_every_table_of_the_schema_and_of_every_methods_parameters() -> None:
    # Prepare: the tables, derived from the schema's types, not from the generator
    expected = [path for path, _ in _tables_in(ExperimentConfig, "")]
    nested = {name: [path for path, _ in _tables_in(method.params, "params.")] for name, method in METHODS.items()}
    headings = _headings(render_reference())

    # Execute / Assert: each has a heading of its own
    assert "vertical" in expected
    assert "tables.sites" in expected
    assert nested["fcm"] == ["params.model"]
    for path in expected:
        assert any(f"`[{path}]`" in h or f"`[[{path}]]`" in h for h in headings), f"[{path}] is not in the reference"
    for name, paths in nested.items():
        for path in paths:
            assert any(h.startswith(f"#### `{name}`") and f"`{path}`" in h for h in headings), f"{name} {path}"


def test_the_reference_test_finds_a_section_left_out() -> None:
    # Prepare: a schema with a table the reference does not have
    class Hidden(BaseModel):
        """Hidden."""

    class Schema(ExperimentConfig):
        """A schema with one more table."""

        hidden: Hidden | None = None

    # Execute
    paths = [path for path, _ in _tables_in(Schema, "")]

    # Assert
    assert "hidden" in paths
    assert not any("`[hidden]`" in h for h in _headings(render_reference()))


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
        (FederationSection, "clients_per_round", "integer in [1, 100000]", "unset"),
        (FederationSection, "arrivals", "array of tables", "`[]`"),
        (ClientsAtRound, "clients", "array of integer >= 0, non-empty", "required"),
        (RunSection, "setting", 'one of `"federated"`, `"centralized"`, `"local"`', '`"federated"`'),
        (ModelParams, "hidden", "array of integer in [1, 16384], at most 64 items", "`[200, 200]`"),
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
