"""The registries that fedmosaic's built-ins and installed plugins fill the same way."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.datasets import DATASETS
from fedmosaic.methods.architectures import MODELS
from fedmosaic.methods.registry import METHODS
from fedmosaic.registry import Registry


@dataclass(frozen=True)
class Colour:
    name: str
    summary: str


def _plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, *values: str) -> Registry[Colour]:
    module = f"paints_{abs(hash(tmp_path))}"  # a module name of this test's own: imports are cached by name
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [
        EntryPoint(f"p{i}", value.replace("paints:", f"{module}:"), "test.colours") for i, value in enumerate(values)
    ]
    return Registry("colour", "test.colours", Colour, discover=lambda: points)


def test_the_built_ins_come_through_fedmosaic_s_own_entry_points() -> None:
    # Execute
    built_in = {
        registry.kind: [name for name in registry if registry.package(name) == "fedmosaic"]
        for registry in (METHODS, MODELS, DATASETS)
    }

    # Assert: fedmosaic's own, first, whatever plugins are installed beside them
    assert {"fedavg", "fedcfa", "fcm", "false-vfl"} <= set(built_in["method"])
    assert built_in["model"] == ["mlp", "cnn", "resnet18"]
    assert {"digits", "mnist", "simpson-mnist", "bnlearn"} <= set(built_in["dataset"])
    assert list(METHODS.names()[: len(built_in["method"])]) == built_in["method"]


def test_an_entry_point_may_give_one_component_or_a_sequence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    source = "from tests.test_registry import Colour\nRED = Colour('red', 'r')\nMORE = (Colour('blue', 'b'), Colour('green', 'g'))\n"

    # Execute
    colours = _plugins(tmp_path, monkeypatch, source, "paints:RED", "paints:MORE")

    # Assert
    assert colours.names() == ("red", "blue", "green")
    assert colours.problems == ()


def test_a_plugin_that_fails_to_import_is_one_line_and_the_others_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    source = "from tests.test_registry import Colour\nRED = Colour('red', 'r')\n"
    (tmp_path / "broken.py").write_text("raise RuntimeError('the plugin is broken')\n")

    # Execute
    colours = _plugins(tmp_path, monkeypatch, source, "broken:ANY", "paints:RED")
    names = colours.names()

    # Assert
    assert names == ("red",)
    assert colours.problems == (
        "plugin 'p0' of unknown package (test.colours) failed to import: RuntimeError: the plugin is broken",
    )
    assert capsys.readouterr().err == f"warning: {colours.problems[0]}\n"


def test_a_taken_name_or_a_wrong_type_is_refused_and_the_first_owner_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    source = "from tests.test_registry import Colour\nRED = Colour('red', 'first')\nAGAIN = Colour('red', 'second')\nNOT = 3\n"

    # Execute
    colours = _plugins(tmp_path, monkeypatch, source, "paints:RED", "paints:AGAIN", "paints:NOT")

    # Assert
    assert colours.get("red").summary == "first"
    assert colours.problems == (
        "plugin 'p1' of unknown package (test.colours): the colour name 'red' is taken (by unknown package); not registered",
        "plugin 'p2' of unknown package (test.colours): gives a int, not a Colour",
    )


def test_an_unknown_name_names_the_field_the_accepted_names_and_a_close_one() -> None:
    # Prepare
    colours: Registry[Colour] = Registry("colour", "test.colours", Colour, discover=lambda: ())
    colours.register(Colour("red", "r"))

    # Execute
    with pytest.raises(ConfigError) as raised:
        colours.get("rd", field="paint.colour")

    # Assert
    assert str(raised.value) == "paint.colour: unknown colour 'rd'; did you mean 'red'? (accepted: red)"
    with pytest.raises(ConfigError, match="'red' is taken"):
        colours.register(Colour("red", "again"))


def test_the_built_ins_load_without_installed_metadata() -> None:
    # Prepare: no entry point found at all (fedmosaic's source run without its distribution's metadata)
    from fedmosaic.methods.base import Method

    methods: Registry[Method] = Registry(
        "method", "fedmosaic.methods", Method, builtin="fedmosaic.methods.builtin:METHODS", discover=lambda: ()
    )

    # Execute
    names = methods.names()

    # Assert
    assert names == tuple(name for name in METHODS if METHODS.package(name) == "fedmosaic")
    assert {methods.package(name) for name in names} == {"fedmosaic"}
