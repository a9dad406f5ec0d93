"""What every method provides: validated parameters, a builder, and what of the runtime it honours."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from fedmosaic.errors import ConfigError

if TYPE_CHECKING:
    from fedmosaic.federation import ClientLogic, ServerLogic

Built: TypeAlias = "tuple[ServerLogic, Callable[[int], ClientLogic]]"
"""What a builder returns: the server logic and a factory of client logic by client id (a type for annotations)."""
TaskKind = Literal["classification", "concepts", "vertical"]


class MethodParams(BaseModel):
    """Base of every method's parameters: unknown keys, loose types and non-finite floats are rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    def check_model(self, model: Any) -> None:
        """Refuse a classifier (the task's ``[model]``, built once) that this method cannot train.

        The runner calls it before any run, so that an architecture the method
        cannot use is refused before anything is written. The default: any
        classifier.

        Raises
        ------
        ConfigError
            Naming the field below the run (``params.split``; ``method`` when
            the method cannot train that architecture at all).
        """

    def check_own_model(self, shapes: Sequence[tuple[int, ...]], num_classes: int) -> None:
        """Build the method's model parts of the user's own once, on parties whose examples have ``shapes`` (one for a single input), for ``num_classes`` classes.

        The runner calls it before any run, so that a factory that cannot
        build, or builds the wrong shape, is refused before anything is
        written. The default: the method takes no model of the user's own.

        Raises
        ------
        ConfigError
            Naming the factory's field below the run's parameters (``model.factory``).
        """


@dataclass(frozen=True)
class Capabilities:
    """The runtime features a method honours; the configuration refuses the others.

    Each flag is a promise that the feature acts on the method's run as
    documented; a feature a method would skip silently is refused instead
    (``load_config``), rather than a run reporting a guarantee it does not give.

    Parameters
    ----------
    dp_sgd : bool, default False
        Local DP-SGD (``train.dp_noise_multiplier``): the clients train the
        global model with the one training loop, and its loss is a mean of
        per-example terms, with nothing that mixes examples of a batch or
        depends on the parameters alone.
    client_dp : bool, default False
        Client-level DP (``[privacy]``): everything the clients' uploads put
        into what the server releases passes through one
        :meth:`~fedmosaic.federation.round.RoundContext.aggregate` per round,
        so the Gaussian mechanism clips and noises all of it and the
        accountant's ``dp_epsilon`` covers it. Methods that share other
        statistics of the clients' data (means, control variates) or never
        aggregate (vertical methods) cannot honour it.
    robust_aggregation : bool, default False
        The ``[aggregation]`` rules (median, trimmed mean, ``clip_norm``):
        the clients' model arrays are combined through
        :meth:`~fedmosaic.federation.round.RoundContext.aggregate`, and no
        other upload steers the global model around the rule.
    update_attacks : bool, default False
        The ``sign-flip`` and ``scale`` attacks of ``[attack]``: replies carry
        model arrays under the names they were sent, so the attack has an
        update to reverse or scale.
    graph_attacks : bool, default False
        The ``reversed-graph`` and ``random-graph`` attacks of ``[attack]``:
        clients upload a confidence matrix (array ``confidence``).
    kept_optimizer : bool, default False
        ``train.optimizer_state = "kept"``: the clients train with the one
        training loop and give it their client state to keep the optimizer's
        state in.
    secure_aggregation : bool, default False
        ``aggregation.secure``: every upload of the clients' model arrays
        passes through
        :meth:`~fedmosaic.federation.round.RoundContext.exchange_aggregated`,
        and nothing else the clients upload reveals an update.
    """

    dp_sgd: bool = False
    client_dp: bool = False
    robust_aggregation: bool = False
    update_attacks: bool = False
    graph_attacks: bool = False
    kept_optimizer: bool = False
    secure_aggregation: bool = False

    def names(self) -> tuple[str, ...]:
        """The flags that are set, in declaration order.

        Examples
        --------
        >>> Capabilities(dp_sgd=True, graph_attacks=True).names()
        ('dp_sgd', 'graph_attacks')
        """
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


@dataclass(frozen=True)
class Method:
    """A registered method.

    Parameters
    ----------
    name : str
        Name used in configurations.
    summary : str
        One line for listings.
    kind : {"classification", "concepts", "vertical"}
        The kind of task (and of prepared data) the method is built from.
    params : type of MethodParams
        Validates the method's parameters.
    builder : callable (task, params) -> (ServerLogic, client factory)
        Creates the server logic and a factory of client logic by client id,
        from parameters of type ``params`` (checked by :meth:`build`).
    supports : Capabilities, default Capabilities()
        The runtime features the method honours.
    """

    name: str
    summary: str
    kind: TaskKind
    params: type[MethodParams]
    builder: Callable[[Any, Any], Built]
    supports: Capabilities = Capabilities()

    def build(self, task: Any, params: MethodParams) -> Built:
        """The server logic and client factory for ``task``.

        Raises
        ------
        ConfigError
            If ``params`` are not the method's parameters (one line naming the method).
        """
        if type(params) is not self.params:
            raise ConfigError(
                "params", f"method '{self.name}' takes {self.params.__name__}, got {type(params).__name__}"
            )
        return self.builder(task, params)
