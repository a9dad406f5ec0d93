"""A site's own arrays as a NumPy ``.npz`` file: ``x`` of any shape (images, signals) and ``y`` or concepts, checked.

The file is read with ``allow_pickle=False``: an object array (pickled Python
objects, which would run code when loaded) is refused, never loaded. Every
other problem is one line naming the file: a missing or unknown array, rows
that disagree, a dtype that is not numeric, NaN or infinite values, a label
that is not one of ``tables.classes``.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.data.tables.ids import check_unique_ids
from fedmosaic.data.tables.read import FEATURE_LIMIT
from fedmosaic.errors import ConfigError

ARRAYS = ("x", "y")
"""The arrays a site's ``.npz`` holds: ``x`` (a row per example, any shape after it) and ``y`` (a label per row)."""


def read_npz_site(file: str, field: str, classes: list[str]) -> ArrayDataset:
    """A site's ``x`` and ``y``, checked; labels become indices into ``classes``.

    ``y`` holds each row's class as written in ``classes`` (strings), or its
    index in ``classes`` (integers).

    Raises
    ------
    ConfigError
        Naming ``field`` and the file, on the first problem.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "site.npz"
    >>> np.savez(path, x=np.zeros((3, 1, 2, 2), np.float32), y=np.array(["cat", "dog", "cat"]))
    >>> site = read_npz_site(str(path), "tables.sites.0.file", ["cat", "dog"])
    >>> site.x.shape, site.y.tolist()
    ((3, 1, 2, 2), [0, 1, 0])
    >>> np.savez(path, x=np.full((2, 2), np.nan), y=np.array([0, 1]))
    >>> read_npz_site(str(path), "tables.sites.0.file", ["cat", "dog"])
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: tables.sites.0.file: site.npz: x holds 4 NaN or infinite values (the first in row 1)
    """
    name = Path(file).name
    arrays = _load(file, field)
    unknown = sorted(set(arrays) - set(ARRAYS))
    missing = [key for key in ARRAYS if key not in arrays]
    if missing or unknown:
        found = ", ".join(sorted(arrays)) or "nothing"
        raise ConfigError(field, f"{name}: needs the arrays x and y and nothing else, found {found}")
    x, y = _checked_x(arrays["x"], name, field), arrays["y"]
    if y.shape != (len(x),):
        raise ConfigError(field, f"{name}: y needs one label per row of x ({len(x)}), got shape {y.shape}")
    return ArrayDataset(x, _label_indices(y, classes, name, field), num_classes=len(classes))


def _checked_x(x: np.ndarray, name: str, field: str) -> np.ndarray:
    """``x`` as float32, once it holds a row per example of finite numbers."""
    if x.ndim < 2 or not len(x):
        raise ConfigError(field, f"{name}: x needs a row per example and a feature axis, got shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise ConfigError(field, f"{name}: x must hold numbers (bool, int or float), got dtype {x.dtype}")
    bad = ~np.isfinite(x.reshape(len(x), -1)) if x.dtype.kind == "f" else np.zeros((len(x), 1), bool)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise ConfigError(
            field, f"{name}: x holds {int(bad.sum())} NaN or infinite values (the first in row {row + 1})"
        )
    huge = np.abs(x.reshape(len(x), -1)) > FEATURE_LIMIT
    if huge.any():
        row = int(np.argwhere(huge)[0][0])
        raise ConfigError(
            field,
            f"{name}: x holds {int(huge.sum())} values out of range (the first in row {row + 1}; a feature is a"
            f" float32 within ±{FEATURE_LIMIT:.0e}; rescale them)",
        )
    return x.astype(np.float32)


@dataclass(frozen=True)
class NpzConcepts:
    """A concept site's ``.npz``: ``x`` (flattened to features) and one array per concept it labels.

    A concept's array holds each row's category as written in
    ``tables.concepts`` (strings, ``""`` for an unlabeled row) or its index
    there (integers, ``-1`` for an unlabeled row). It answers what a concept
    site's reader asks of a table (``has``, ``require``, ``categories``), so
    both are read by the same code.
    """

    path: str
    field: str
    x: np.ndarray
    arrays: dict[str, np.ndarray]

    def has(self, column: str) -> bool:
        """Whether the file holds the concept ``column``."""
        return column in self.arrays

    def require(self, columns: list[str]) -> None:
        """Reject a file that lacks one of the concepts ``columns``."""
        missing = [c for c in columns if c not in self.arrays]
        if missing:
            found = ", ".join(sorted(self.arrays)) or "none"
            raise ConfigError(self.field, f"{Path(self.path).name} has no array {missing[0]!r} (concepts: {found})")

    def categories(self, column: str, categories: list[str], schema_field: str) -> np.ndarray:
        """The codes of concept ``column`` by ``categories`` (int64), ``-1`` for an unlabeled row."""
        self.require([column])
        return _codes(self.arrays[column], column, len(self.x), categories, schema_field, self.path, self.field)


def _codes(
    values: np.ndarray, array: str, rows: int, categories: list[str], schema_field: str, path: str, field: str
) -> np.ndarray:
    """``values`` (category names, ``""`` unlabeled; or indices, ``-1`` unlabeled) as int64 codes into ``categories``."""
    name = Path(path).name
    if values.shape != (rows,):
        raise ConfigError(field, f"{name}: {array} needs one value per row of x ({rows}), got shape {values.shape}")
    if values.dtype.kind in "iu":
        outside = (values < -1) | (values >= len(categories))
        codes = values.astype(np.int64)
    elif values.dtype.kind == "U":
        index = {label: k for k, label in enumerate(categories)} | {"": -1}
        codes = np.array([index.get(str(v), -2) for v in values.tolist()], dtype=np.int64)
        outside = codes == -2
    else:
        raise ConfigError(field, f"{name}: {array} must hold category names or indices, got dtype {values.dtype}")
    if outside.any():
        row = int(np.argmax(outside))
        raise ConfigError(
            field,
            f"{name}, array {array!r}, row {row + 1}: {str(values[row])!r} is not a category of "
            f"{schema_field} ({', '.join(categories)})",
        )
    return codes


@dataclass(frozen=True)
class NpzParty:
    """A vertical party's ``.npz``: its row ``ids`` (text), ``x`` flattened, its examples' ``shape``, and the active party's labels ``y``."""

    ids: list[str]
    x: np.ndarray
    shape: tuple[int, ...]
    y: np.ndarray | None


def read_npz_party(
    file: str, field: str, shape: tuple[int, ...] | None, classes: list[str] | None, *, ignore_y: bool = False
) -> NpzParty:
    """A vertical party's ``.npz``: ``ids``, ``x`` of examples of ``shape``, and with ``classes`` (the active party) ``y``.

    ``ids`` are text or integers, unique and non-empty; ``y`` holds each row's
    class as written in ``classes`` or its index there, ``""`` or ``-1`` where
    the row is unlabeled. ``shape`` None takes examples of any shape;
    ``ignore_y`` (with no ``classes``) allows a ``y`` array and leaves it
    unread (a prediction's inputs).

    Raises
    ------
    ConfigError
        Naming ``field`` and the file, on the first problem.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "view.npz"
    >>> np.savez(path, ids=np.array([7, 3]), x=np.zeros((2, 1, 2, 2)), y=np.array(["cat", ""]))
    >>> party = read_npz_party(str(path), "tables.parties.0.file", (1, 2, 2), ["cat", "dog"])
    >>> party.ids, party.x.shape, party.y.tolist()
    (['7', '3'], (2, 4), [0, -1])
    >>> read_npz_party(str(path), "tables.parties.0.file", (4,), ["cat", "dog"])
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: tables.parties.0.file: view.npz: x holds examples of shape (1, 2, 2), but the party's shape is (4,)
    """
    name = Path(file).name
    arrays = _load(file, field)
    expected = ("ids", "x", *(("y",) if classes is not None else ()))
    if ignore_y:
        arrays.pop("y", None)
    if sorted(arrays) != sorted(expected):
        found = ", ".join(sorted(arrays)) or "nothing"
        raise ConfigError(field, f"{name}: needs the arrays {', '.join(expected)} and nothing else, found {found}")
    x = _checked_x(arrays["x"], name, field)
    if shape is not None and x.shape[1:] != shape:
        raise ConfigError(field, f"{name}: x holds examples of shape {x.shape[1:]}, but the party's shape is {shape}")
    ids = _checked_ids(arrays["ids"], len(x), name, field)
    y = None if classes is None else _codes(arrays["y"], "y", len(x), classes, "tables.classes", file, field)
    return NpzParty(ids, x.reshape(len(x), -1), x.shape[1:], y)


def _checked_ids(ids: np.ndarray, rows: int, name: str, field: str) -> list[str]:
    """A party's row IDs as text, once there is one per row of ``x``, each non-empty and unique."""
    if ids.shape != (rows,) or ids.dtype.kind not in "Uiu":
        raise ConfigError(
            field,
            f"{name}: ids needs one text or integer ID per row of x ({rows}), got {ids.dtype} of shape {ids.shape}",
        )
    text = [str(value) for value in ids.tolist()]
    check_unique_ids(text, f"{name}, array 'ids'", field)
    return text


def read_npz_concepts(file: str, field: str, concepts: list[str]) -> NpzConcepts:
    """A concept site's (or the test's) ``.npz``: ``x`` checked and flattened, and its concept arrays.

    Raises
    ------
    ConfigError
        Naming ``field`` and the file: no ``x``, an array that is neither ``x`` nor a concept, a bad ``x``.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "site.npz"
    >>> np.savez(path, x=np.zeros((3, 1, 2, 2)), smoke=np.array(["yes", "", "no"]))
    >>> site = read_npz_concepts(str(path), "tables.sites.0.file", ["smoke", "dysp"])
    >>> site.x.shape, site.categories("smoke", ["no", "yes"], "tables.concepts.smoke").tolist(), site.has("dysp")
    ((3, 4), [1, -1, 0], False)
    """
    name = Path(file).name
    arrays = _load(file, field)
    unknown = sorted(set(arrays) - {"x", *concepts})
    if "x" not in arrays or unknown:
        found = ", ".join(sorted(arrays)) or "nothing"
        raise ConfigError(field, f"{name}: needs x and one array per concept of tables.concepts, found {found}")
    x = _checked_x(arrays.pop("x"), name, field)
    return NpzConcepts(file, field, x.reshape(len(x), -1), arrays)


def _load(file: str, field: str) -> dict[str, np.ndarray]:
    name = Path(file).name
    try:
        with np.load(file, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ConfigError(field, f"{name}: is a single .npy array, not a .npz of the arrays x and y")
            return {key: archive[key] for key in archive.files}
    except FileNotFoundError:
        raise ConfigError(field, f"no such file: {file}") from None
    except ValueError as error:
        if "Object arrays" in str(error):
            raise ConfigError(
                field, f"{name}: holds an object array (pickled Python objects), never loaded; save numeric arrays"
            ) from None
        reason = "a pickle or another format, never unpickled" if "pickled" in str(error) else str(error)
        raise ConfigError(field, f"{name}: not a readable .npz file ({reason})") from None
    except (OSError, zipfile.BadZipFile, EOFError) as error:
        raise ConfigError(field, f"{name}: not a readable .npz file ({type(error).__name__})") from None


def _label_indices(y: np.ndarray, classes: list[str], name: str, field: str) -> np.ndarray:
    """``y`` as indices into ``classes``: strings matched by name, integers taken as indices."""
    if y.dtype.kind in "iu":
        outside = (y < 0) | (y >= len(classes))
        if outside.any():
            row = int(np.argmax(outside))
            raise ConfigError(
                field,
                f"{name}: y holds {int(y[row])} in row {row + 1}, a class never declared "
                f"(tables.classes has {len(classes)}: indices 0 to {len(classes) - 1})",
            )
        return y.astype(np.int64)
    if y.dtype.kind != "U":
        raise ConfigError(
            field, f"{name}: y must hold class names (strings) or indices (integers), got dtype {y.dtype}"
        )
    index = {label: k for k, label in enumerate(classes)}
    unknown = [str(label) for label in np.unique(y) if label not in index]
    if unknown:
        raise ConfigError(
            field, f"{name}: y holds {unknown[0]!r}, a class never declared (tables.classes: {', '.join(classes)})"
        )
    return np.array([index[label] for label in y.tolist()], dtype=np.int64)
