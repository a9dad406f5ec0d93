"""Sites' own arrays (``.npz`` of ``x`` and ``y``): read as given, every problem one line naming the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.tables.npz import read_npz_site
from fedmosaic.errors import ConfigError

CLASSES = ["cat", "dog"]
FIELD = "tables.sites.1.file"


def _site(tmp_path: Path, **arrays: object) -> str:
    path = tmp_path / "site-1.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return str(path)


def test_images_and_named_or_indexed_labels_are_read_as_given(tmp_path: Path) -> None:
    # Prepare
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)

    # Execute
    named = read_npz_site(_site(tmp_path, x=x, y=np.array(["dog", "cat"])), FIELD, CLASSES)
    indexed = read_npz_site(_site(tmp_path, x=x.astype(np.uint8), y=np.array([1, 0])), FIELD, CLASSES)

    # Assert
    assert named.x.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(named.x, x)
    assert named.y.tolist() == indexed.y.tolist() == [1, 0]
    assert indexed.x.dtype == np.float32
    assert named.num_classes == 2


@pytest.mark.parametrize(
    ("arrays", "expected"),
    [
        (
            {"x": np.zeros((2, 3)), "y": np.array(["cat", "bird"])},
            "y holds 'bird', a class never declared (tables.classes: cat, dog)",
        ),
        (
            {"x": np.zeros((2, 3)), "y": np.array([0, 2])},
            "y holds 2 in row 2, a class never declared (tables.classes has 2: indices 0 to 1)",
        ),
        (
            {"x": np.array([[0.0, np.inf], [np.nan, 1.0]]), "y": np.array([0, 1])},
            "x holds 2 NaN or infinite values (the first in row 1)",
        ),
        (
            {"x": np.array([[0.0, 1.0], [1e300, 2e16]]), "y": np.array([0, 1])},
            "x holds 2 values out of range (the first in row 2; a feature is a float32 within ±1e+15; rescale them)",
        ),
        ({"x": np.zeros((3, 2)), "y": np.array([0, 1])}, "y needs one label per row of x (3), got shape (2,)"),
        ({"x": np.zeros(3), "y": np.array([0, 1, 1])}, "x needs a row per example and a feature axis, got shape (3,)"),
        (
            {"x": np.array([["a"], ["b"]]), "y": np.array([0, 1])},
            "x must hold numbers (bool, int or float), got dtype <U1",
        ),
        (
            {"x": np.zeros((2, 3)), "y": np.array([0.0, 1.0])},
            "y must hold class names (strings) or indices (integers), got dtype float64",
        ),
        ({"x": np.zeros((2, 3))}, "needs the arrays x and y and nothing else, found x"),
        (
            {"x": np.zeros((2, 3)), "y": np.array([0, 1]), "z": np.zeros(1)},
            "needs the arrays x and y and nothing else, found x, y, z",
        ),
    ],
)
def test_a_bad_site_file_is_one_line_naming_the_field_and_the_file(
    tmp_path: Path, arrays: dict[str, object], expected: str
) -> None:
    # Execute
    with pytest.raises(ConfigError) as raised:
        read_npz_site(_site(tmp_path, **arrays), FIELD, CLASSES)

    # Assert
    assert str(raised.value) == f"{FIELD}: site-1.npz: {expected}"


def test_an_object_array_is_refused_and_never_unpickled(tmp_path: Path) -> None:
    # Prepare: an object array would be unpickled, running code, if it were loaded
    path = tmp_path / "site-1.npz"
    np.savez(path, x=np.array([{"evil": 1}, None], dtype=object), y=np.array([0, 1]))

    # Execute
    with pytest.raises(ConfigError) as raised:
        read_npz_site(str(path), FIELD, CLASSES)

    # Assert
    assert str(raised.value) == (
        f"{FIELD}: site-1.npz: holds an object array (pickled Python objects), never loaded; save numeric arrays"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"not a zip file", "not a readable .npz file"),
        (None, "no such file"),
    ],
)
def test_a_file_that_is_not_an_npz_is_one_line(tmp_path: Path, content: bytes | None, expected: str) -> None:
    # Prepare
    path = tmp_path / "site-1.npz"
    if content is not None:
        path.write_bytes(content)

    # Execute
    with pytest.raises(ConfigError) as raised:
        read_npz_site(str(path), FIELD, CLASSES)

    # Assert
    assert str(raised.value).startswith(f"{FIELD}: ")
    assert expected in str(raised.value)
    assert "\n" not in str(raised.value)
