"""Validation of incoming replies: what a reply may contain, declared by the method.

Before a reply touches the global state, the round checks it against a
:class:`ReplySpec` the server logic declares for the exchange: the array
names it may hold (nothing else), their shapes and dtypes, finite values,
the metrics and config keys it must or may carry, a positive and plausible
sample count, a size limit, and checks of the method's own (a valid
confidence matrix, chunk means of the right shape). :func:`check_reply`
returns the first reason for rejecting a reply, or ``None``; it never raises,
whatever it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from fedmosaic.federation.message import Message

Check = Callable[[Message], "str | None"]
"""A method's own check of a reply: a reason to reject it, or None."""

NUM_EXAMPLES = "num_examples"


@dataclass(frozen=True)
class ArraySpec:
    """Shape and dtype an array of a reply must have.

    Parameters
    ----------
    shape : tuple of int or None
        Expected shape; ``None`` accepts any length along that axis.
    dtype : str
        Expected NumPy dtype (``"float32"``, ``"int64"``...).

    Examples
    --------
    >>> import numpy as np
    >>> ArraySpec((None, 3), "float32").mismatch(np.zeros((5, 3), np.float32)) is None
    True
    >>> ArraySpec((None, 3), "float32").mismatch(np.zeros((5, 2), np.float32))
    'shape (5, 2), expected (*, 3)'
    """

    shape: tuple[int | None, ...]
    dtype: str

    @classmethod
    def like(cls, array: np.ndarray) -> ArraySpec:
        """The spec of an array exactly as ``array`` (same shape and dtype)."""
        return cls(tuple(int(n) for n in array.shape), str(array.dtype))

    def mismatch(self, array: np.ndarray) -> str | None:
        """Why ``array`` does not fit (dtype or shape), or None."""
        if str(array.dtype) != self.dtype:
            return f"dtype {array.dtype}, expected {self.dtype}"
        if len(array.shape) != len(self.shape) or any(
            want is not None and got != want for got, want in zip(array.shape, self.shape, strict=True)
        ):
            expected = ", ".join("*" if n is None else str(n) for n in self.shape)
            return f"shape {tuple(array.shape)}, expected ({expected}{',' if len(self.shape) == 1 else ''})"
        return None


@dataclass(frozen=True)
class ReplySpec:
    """What a reply to one exchange may contain.

    Parameters
    ----------
    arrays : mapping of str to ArraySpec, default empty
        Every array name the reply may hold, with its shape and dtype.
    partial : bool, default False
        Whether the reply may hold only some of ``arrays`` (a module-wise
        upload); otherwise it holds all of them.
    optional_arrays : mapping of str to ArraySpec, default empty
        Further arrays the reply may hold or leave out (shared statistics).
    metrics : frozenset of str, default empty
        Metrics the reply must carry (finite numbers).
    optional_metrics : frozenset of str, default empty
        Metrics it may carry.
    config : frozenset of str, default empty
        Config keys it may carry.
    kind : str or None, default None
        The message kind it must have (None: any).
    checks : tuple of callable, default ()
        The method's own checks, each returning a reason or None; a check
        that raises rejects the reply too.
    open : bool, default False
        Accept any names of arrays, metrics and config (only the generic
        checks apply): the spec of an exchange whose server logic declares
        none.

    Notes
    -----
    A ``num_examples`` metric must be positive and at most the round's
    ``max_examples``; the reply's size at most ``max_bytes``
    (:class:`ReplyLimits`).

    Examples
    --------
    >>> import numpy as np
    >>> spec = ReplySpec.like({"w": np.zeros(2, np.float32)}, metrics={"num_examples"})
    >>> check_reply(Message(arrays={"w": np.ones(2, np.float32)}, metrics={"num_examples": 3.0}), spec)
    >>> check_reply(Message(arrays={"v": np.ones(2, np.float32)}, metrics={"num_examples": 3.0}), spec)
    "unexpected array 'v'"
    """

    arrays: Mapping[str, ArraySpec] = field(default_factory=dict)
    partial: bool = False
    optional_arrays: Mapping[str, ArraySpec] = field(default_factory=dict)
    metrics: frozenset[str] = frozenset()
    optional_metrics: frozenset[str] = frozenset()
    config: frozenset[str] = frozenset()
    kind: str | None = None
    checks: tuple[Check, ...] = ()
    open: bool = False

    @classmethod
    def like(
        cls,
        arrays: Mapping[str, np.ndarray],
        *,
        metrics: set[str] | frozenset[str] = frozenset(),
        **options: object,
    ) -> ReplySpec:
        """A spec expecting the arrays as sent: same names, shapes and dtypes."""
        specs = {name: ArraySpec.like(array) for name, array in arrays.items()}
        return cls(arrays=specs, metrics=frozenset(metrics), **options)  # type: ignore[arg-type]

    def extended(self, *, optional_arrays: Mapping[str, ArraySpec], checks: tuple[Check, ...] = ()) -> ReplySpec:
        """A copy of the spec with further optional arrays and checks (a wrapper's own uploads)."""
        return replace(
            self,
            optional_arrays={**self.optional_arrays, **optional_arrays},
            checks=self.checks + checks,
        )


@dataclass(frozen=True)
class ReplyLimits:
    """Limits every reply of a federation must respect, whatever the method.

    Parameters
    ----------
    max_bytes : int, default 256 MiB
        Largest reply (``Message.nbytes``).
    max_examples : float, default 1e9
        Largest plausible ``num_examples``.
    """

    max_bytes: int = 256 * 2**20
    max_examples: float = 1e9


OPEN = ReplySpec(open=True)
"""The spec of an exchange that declares none: generic checks only."""


def reply_size(reply: object) -> int:
    """Bytes ``reply`` occupies on the wire, or 0 when it cannot be measured (not a message)."""
    if not isinstance(reply, Message):
        return 0
    try:
        return int(reply.nbytes())
    except Exception:  # noqa: BLE001 - whatever a hostile reply holds, measuring it must not fail
        return 0


def check_reply(reply: object, spec: ReplySpec, limits: ReplyLimits = ReplyLimits()) -> str | None:
    """The first reason to reject ``reply``, or None when it fits ``spec``.

    Never raises: anything a client could send is either accepted or given
    a one-line reason.

    Parameters
    ----------
    reply : object
        What arrived (a :class:`Message` when the client is well-behaved).
    spec : ReplySpec
        What the method expects.
    limits : ReplyLimits, default ReplyLimits()
        Size and sample-count limits.

    Returns
    -------
    str or None
    """
    reason = _check_structure(reply, spec, limits)
    if reason is not None:
        return reason
    assert isinstance(reply, Message)  # the structure check found none of the ways it is not
    for step in (_check_size, _check_arrays, _check_metrics, _check_config):
        reason = step(reply, spec, limits)
        if reason is not None:
            return reason
    for check in spec.checks:
        try:
            reason = check(reply)
        except Exception as error:  # noqa: BLE001 - a method's check that fails on odd input rejects it
            reason = f"{type(error).__name__}: {error}"
        if reason is not None:
            return _one_line(reason)
    return None


def _check_structure(reply: object, spec: ReplySpec, limits: ReplyLimits) -> str | None:
    if not isinstance(reply, Message):
        return f"not a message ({type(reply).__name__})"
    for part, kind in (("arrays", dict), ("config", dict), ("metrics", dict)):
        value = getattr(reply, part)
        if not isinstance(value, kind):
            return f"{part} is a {type(value).__name__}, not a mapping"
        if not all(isinstance(key, str) for key in value):
            return f"{part} has a name that is not a string"
    if not isinstance(reply.kind, str):
        return f"kind is a {type(reply.kind).__name__}, not a string"
    if spec.kind is not None and reply.kind != spec.kind:
        return f"kind {_short(reply.kind)}, expected {spec.kind!r}"
    for name, array in reply.arrays.items():
        if not isinstance(array, np.ndarray):
            return f"array {_short(name)} is a {type(array).__name__}, not an ndarray"
        if array.dtype.kind not in "biuf":
            return f"array {_short(name)} has dtype {array.dtype}, not numeric"
    return None


def _check_size(reply: Message, spec: ReplySpec, limits: ReplyLimits) -> str | None:
    array_bytes = sum(int(a.nbytes) for a in reply.arrays.values())
    if array_bytes > limits.max_bytes:
        return f"{array_bytes} bytes of arrays > limit {limits.max_bytes}"
    try:
        size = reply.nbytes()
    except (TypeError, ValueError, OverflowError, RecursionError) as error:
        return f"config or metrics cannot be encoded: {_short(str(error))}"
    if size > limits.max_bytes:
        return f"{size} bytes > limit {limits.max_bytes}"
    return None


def _check_arrays(reply: Message, spec: ReplySpec, limits: ReplyLimits) -> str | None:
    for name, array in reply.arrays.items():
        expected = spec.arrays.get(name) or spec.optional_arrays.get(name)
        if expected is None and not spec.open:
            return f"unexpected array {_short(name)}"
        mismatch = expected.mismatch(array) if expected is not None else None
        if mismatch is not None:
            return f"array {name!r}: {mismatch}"
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return f"array {name!r} has non-finite values"
    if not spec.partial:
        missing = sorted(set(spec.arrays) - set(reply.arrays))
        if missing:
            return f"missing arrays {missing[:3]}{'...' if len(missing) > 3 else ''}"
    return None


def _check_metrics(reply: Message, spec: ReplySpec, limits: ReplyLimits) -> str | None:
    allowed = spec.metrics | spec.optional_metrics
    for name, value in reply.metrics.items():
        if name not in allowed and not spec.open:
            return f"unexpected metric {_short(name)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"metric {name!r} is not a finite number: {_short(repr(value))}"
    missing = sorted(spec.metrics - set(reply.metrics))
    if missing:
        return f"missing metrics {missing}"
    if NUM_EXAMPLES in reply.metrics:
        examples = reply.metrics[NUM_EXAMPLES]
        if not 0 < examples <= limits.max_examples:
            return f"num_examples {examples} is not in (0, {limits.max_examples:g}]"
    return None


def _check_config(reply: Message, spec: ReplySpec, limits: ReplyLimits) -> str | None:
    for name, value in reply.config.items():
        if name not in spec.config and not spec.open:
            return f"unexpected config key {_short(name)}"
        if not _is_config_value(value):
            return f"config {name!r} is not a scalar or a list of scalars"
    return None


def _is_config_value(value: object) -> bool:
    scalar = (int, float, str, bool)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(isinstance(v, scalar) and not (isinstance(v, float) and not math.isfinite(v)) for v in value)
    return isinstance(value, scalar)


def _short(text: object, limit: int = 40) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _one_line(reason: str) -> str:
    flat = " ".join(str(reason).split())
    return flat if len(flat) <= 200 else flat[:197] + "..."


def label_means_check(x_name: str, y_name: str, max_rows: Callable[[float], int]) -> Check:
    """A check of shared means: input means ``x_name`` and one-hot label means ``y_name``.

    Both hold the same number of rows, at least one and at most
    ``max_rows(num_examples)`` (a client sharing more means than its data
    allows would be sharing something closer to samples), and every label
    mean is a distribution (non-negative, summing to 1).

    Examples
    --------
    >>> import numpy as np
    >>> check = label_means_check("mx", "my", lambda n: int(n) // 2)
    >>> reply = Message(arrays={"mx": np.zeros((3, 2)), "my": np.full((3, 2), 0.5)}, metrics={"num_examples": 4.0})
    >>> check(reply)
    "mx has 3 rows, more than the 2 the client's 4 examples allow"
    """

    def check(reply: Message) -> str | None:
        held = [name for name in (x_name, y_name) if name in reply.arrays]
        if not held:
            return None
        if len(held) == 1:
            return f"{held[0]} without its partner"
        x, y = reply.arrays[x_name], reply.arrays[y_name]
        if len(x) != len(y) or len(x) == 0:
            return f"{x_name} and {y_name} hold {len(x)} and {len(y)} rows"
        examples = float(reply.metrics.get(NUM_EXAMPLES, 0.0))
        allowed = max_rows(examples)
        if len(x) > allowed:
            return f"{x_name} has {len(x)} rows, more than the {allowed} the client's {examples:g} examples allow"
        if (y < 0).any() or not np.allclose(y.sum(axis=1), 1.0, atol=1e-3):
            return f"{y_name} rows are not distributions over the classes"
        return None

    return check


def log_variance_check(*names: str) -> Check:
    """A check of log-variances: each ``exp(value)`` a positive, finite variance in the array's dtype.

    A log-variance far outside the dtype's range is finite but stands for a
    variance of zero or infinity, which turns precisions and samples into
    NaN downstream.

    Examples
    --------
    >>> import numpy as np
    >>> check = log_variance_check("logvar")
    >>> check(Message(arrays={"logvar": np.zeros(2, np.float32)})) is None
    True
    >>> check(Message(arrays={"logvar": np.array([0.0, -200.0], np.float32)}))
    'logvar: variance exp(-200) is not a positive finite float32'
    """

    def check(reply: Message) -> str | None:
        for name in names:
            logvar = reply.arrays.get(name)
            if logvar is None or logvar.size == 0:
                continue
            info = np.finfo(logvar.dtype)
            low, high = float(np.log(info.tiny)), float(np.log(info.max))
            bad = (logvar < low) | (logvar > high)
            if bad.any():
                return f"{name}: variance exp({float(logvar[bad].flat[0]):g}) is not a positive finite {logvar.dtype}"
        return None

    return check
