"""The sections of an experiment's configuration, one pydantic model each (``[data]``, ``[federation]``, ...).

:class:`~fedmosaic.experiments.config.ExperimentConfig` assembles them and
:func:`~fedmosaic.experiments.config.load_config` checks the rules between
them; each section here checks only its own keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from fedmosaic.limits import (
    MAX_EPSILON,
    MAX_NOISE,
    MAX_NORM,
    MAX_SAMPLES,
    MIN_EPSILON,
    Clients,
    Rounds,
    Samples,
    Threads,
    Width,
)

VERTICAL_DATASETS = ("digits", "fashion-mnist", "isolet", "mnist")
"""Datasets a ``[vertical]`` task can cut into party blocks."""
VERTICAL_IMAGE_DATASETS = ("digits", "fashion-mnist", "mnist")
"""Of those, the images (patches, Bernoulli pixels)."""


class Section(BaseModel):
    """Base of every configuration section: unknown keys, loose types and non-finite floats are rejected.

    Infinite values, where a key accepts them (``vertical.alpha = inf``) stay floats when the
    configuration is recorded, so the recorded ``config.toml`` loads back.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, ser_json_inf_nan="constants")


class DataSection(Section):
    """Which dataset, and where its files are.

    Parameters
    ----------
    dataset : str, default "digits"
        A registered dataset (``fedmosaic presets`` lists them, plugins'
        included): ``digits``, ``mnist``, ``fashion-mnist``, ``isolet``,
        ``cifar-10``, ``cifar-100``, ``simpson-mnist``, ``bnlearn`` and
        ``shapes`` are fedmosaic's own. ``digits`` ships with scikit-learn; ``bnlearn`` samples concept data
        from a Bayesian network that ships with pgmpy (for concept methods);
        ``shapes`` draws 16x16 images of coloured shapes whose shape, colour,
        size, position and background are concepts, from a small causal
        network, the task a function of colour and position (for concept
        methods; ``docs/methods/fcm.md``);
        ``simpson-mnist`` colours MNIST's 1s and 7s so that every client shows
        the trend the pooled data reverses (``partition.num_clients`` clients,
        one shade band each); the others are read from the data directory.
    data_dir : str or None, default None
        Data directory; otherwise ``--data-dir``, then ``FEDMOSAIC_DATA``, then
        the default cache folder.
    test_fraction : float, default 0.25
        Share of ``digits`` held out for testing (the others have a fixed
        test split).
    network : str, default "asia"
        ``bnlearn`` only: the network (asia, sachs, alarm, insurance,
        hailfinder, or any other network pgmpy ships).
    task : str or None, default None
        ``bnlearn`` only: the task node (default: dysp, Akt, BP, PropCost,
        R5Fcst for the five networks above; required for others).
    samples : int or None, default None
        ``bnlearn`` and ``shapes`` only: samples drawn in all (default per
        network: 10k, 15k, 2k, 10k, 40k; 5,000 images of shapes), split
        70/10/20 into train, validation and test.
    latent_dim : int or None, default None
        ``bnlearn`` only: width of the autoencoder latent that forms the
        input (default 32 for asia and sachs, 64 otherwise).
    noise_share : float or None, default None
        ``bnlearn`` only: share ``s`` of Gaussian noise in the input,
        ``x = (1 - s) * latent + s * N(0, 1)`` with the latent on unit scale,
        in [0, 1). The default (0.7) makes concepts imperfectly predicted, as
        in the F-CMs paper; ``0`` gives clean inputs, the easy setting where
        concepts are predicted almost perfectly and interventions gain little.
        With ``inputs = "reference"`` the share is mixed on the raw latent
        (default 0.5, the reference code's).
    inputs : {"concepts", "reference"}, default "concepts"
        ``bnlearn`` only: how ``x`` is built. ``concepts`` is fedmosaic's
        (one-hot concepts, an autoencoder fitted on the train split, its
        latent on unit scale before the noise); ``reference`` is the F-CMs
        reference code's (an MSE autoencoder on the raw integer codes fitted
        on every split, at most 300 epochs, the noise mixed on its raw
        latent).
    leak_task : bool, default False
        ``bnlearn`` only: encode the task into ``x`` with the concepts, as
        one version of the reference code does; ``x`` then carries the
        label, and a model can read the task from it without its concepts.
    samples_per_client : int, default 1000
        ``simpson-mnist`` only: training digits per client.
    simpson_design : {"conflicting", "bands"}, default "conflicting"
        ``simpson-mnist`` only: ``conflicting`` gives each client a colour
        rule ("darker is 1" within shades that neighbouring clients read the
        other way; pooled, lighter is 1; at least 3 clients); ``bands`` is
        the first design, disjoint shade bands where one colour rule is right
        everywhere (kept to reproduce its results).
    test_colours : {"pooled", "independent"} or None, default None
        ``simpson-mnist`` only: test shades drawn like the pooled data, or
        independently of the label; unset: ``independent`` for the
        ``conflicting`` design, ``pooled`` for ``bands``.
    pretrain_samples : int, default 1000
        ``simpson-mnist`` only: size of the sample the initial model is
        pre-trained on (``train.pretrain_epochs``); its shades are
        independent of the label in the ``conflicting`` design.
    validation_samples : int, default 1000
        ``simpson-mnist`` only: size of the validation set, training digits
        no client holds, shaded as the test set.
    evaluate_on : {"test", "validation", "both"}, default "test"
        ``simpson-mnist`` only: evaluate (accuracy and colour reliance) on
        the test set, or on the validation set to choose hyper-parameters;
        ``both`` evaluates on the test set and also reports the validation
        set's numbers, prefixed ``validation_``, to choose on them.
    resolution : int or None, default None
        ``simpson-mnist`` only: side in pixels the digits are averaged down
        to (then scaled back up) before being tinted; coarser digits make the
        shape less informative and the colour shortcut more tempting. None
        keeps MNIST's 28 x 28.
    """

    dataset: str = "digits"
    data_dir: str | None = None
    test_fraction: float = Field(default=0.25, gt=0, lt=1)
    network: str = "asia"
    task: str | None = None
    samples: Samples | None = None
    latent_dim: Width | None = None
    noise_share: float | None = Field(default=None, ge=0, lt=1)
    inputs: Literal["concepts", "reference"] = "concepts"
    leak_task: bool = False
    samples_per_client: Samples = 1000
    simpson_design: Literal["conflicting", "bands"] = "conflicting"
    test_colours: Literal["pooled", "independent"] | None = None
    pretrain_samples: int = Field(default=1000, ge=0, le=MAX_SAMPLES)
    validation_samples: int = Field(default=1000, ge=0, le=MAX_SAMPLES)
    evaluate_on: Literal["test", "validation", "both"] = "test"
    resolution: int | None = Field(default=None, ge=1, le=28)


class ConceptsSection(Section):
    """How concept-labeled clients are laid out (``bnlearn`` and ``shapes`` data).

    Parameters
    ----------
    num_clients : int, default 20
        Number of clients.
    initial_clients : int, default 10
        Clients present from round 1; the others join at ``join_round``.
    join_round : int or None, default None
        Round at which the late clients join (default 10 for asia and
        shapes, 20 otherwise).
    confidence : {"oracle", "learned"}, default "oracle"
        Local confidence matrices: the true graph restricted to the client's
        concepts (some clients corrupted), or learned from the client's own
        data by bootstrap structure learning.
    corrupt_clients : float, default 0.1
        Oracle mode: share of clients whose matrix is corrupted.
    corrupt_pairs : float, default 0.1
        Oracle mode: share of a corrupted client's concept pairs inverted,
        removed or added.
    cover : {"ancestors", "all"}, default "ancestors"
        What the clients' concept subsets cover together: the task's
        ancestors, or every node of the network (as the reference code's
        do: each other node joins one subset drawn at random).
    """

    num_clients: Clients = 20
    initial_clients: Clients = 10
    join_round: Rounds | None = None
    confidence: Literal["oracle", "learned"] = "oracle"
    corrupt_clients: float = Field(default=0.1, ge=0, le=1)
    corrupt_pairs: float = Field(default=0.1, ge=0, le=1)
    cover: Literal["ancestors", "all"] = "ancestors"


class PartitionSection(Section):
    """How the training data is split across clients.

    Parameters
    ----------
    scheme : {"iid", "dirichlet", "pathological"}, default "dirichlet"
        Uniform split, Dirichlet label skew, or a few classes per client.
    num_clients : int, default 10
        Number of clients (at most the number of training samples).
    alpha : float, default 0.5
        Dirichlet concentration (> 0); smaller is more skewed.
    classes_per_client : int, default 2
        Classes each client holds under ``pathological``.
    min_size : int, default 10
        Fewest training samples a client may hold.
    """

    scheme: Literal["iid", "dirichlet", "pathological"] = "dirichlet"
    num_clients: Clients = 10
    alpha: float = Field(default=0.5, gt=0)
    classes_per_client: Clients = 2
    min_size: Samples = 10


class VerticalSection(Section):
    """A vertical task: column blocks over parties, who holds which row, and the label budget.

    Present only for vertical experiments (methods false-vfl, vfl-local,
    vanilla-vfl, plug-vfl, laser-vfl, fedhssl). Party 0 is the active party (labels);
    the others are the federation's clients.

    Parameters
    ----------
    num_parties : int or None, default None
        K, the active party included (>= 2; default 8 for tabular data, 4 for images).
    split : {"even", "dirichlet", "patches"} or None, default None
        Contiguous blocks of equal width, VertiBench's Dirichlet importance
        split, or image patches (default: patches for images, even otherwise).
    alpha : float, default 1.0
        Dirichlet split concentration (> 0; ``inf`` for equal weights).
    train_missing : str, default "mcar:0.5"
        Missingness of the training rows: ``mcar:<p>``, ``mar:<1 or 2>``,
        ``mnar:<rate>``, or ``keep:<k>`` (exactly k parties per row)
        (docs/methods/vertical.md).
    test_missing : str or list of str, default "mcar:0.0"
        Missingness of the test rows, drawn independently from the same
        mechanism as the training rows (one MAR and one MNAR model: the same
        score directions, standardization and calibration); with a list, the
        trained models are evaluated under each (metrics ``accuracy_mcar0``,
        ``accuracy_mnar9``...; ``accuracy`` is the first).
    label_budget : int or None, default None
        Labeled training rows (default 500 for tabular data, 1000 for images).
    label_rows : {"active", "all"}, default "active"
        Where the labeled rows are drawn: among the rows the active party
        holds, or among all training rows (the active party knows the label
        of a row whose features it lacks).
    train_rows : int or None, default None
        Use a seeded random subset of this many training rows (default: all).
    test_rows : int or None, default None
        Use a seeded random subset of this many test rows (default: all).
    validation_fraction : float or None, default None
        Share of the labeled rows held out (the same rows for every run) to
        select each method's round and stop it early; 0 selects the last
        round. None: 0.2 under the tuned protocol, 0 under the paper protocol
        (which refuses any other value).
    protocol : {"tuned", "paper"}, default "tuned"
        How the baselines run (docs/methods/vertical.md, "Protocols"):
        ``tuned``, at full strength (``passes`` epochs per round, validation
        selection, PlugVFL with party dropout); ``paper``, as the paper and
        the LASER-VFL reference code (Vanilla VFL, PlugVFL and FedHSSL
        predict only the test rows every party holds, PlugVFL without
        dropout, one epoch per round, every method tested at the last round).
    unaligned_prediction : {"random", "majority"}, default "random"
        Under the paper protocol, what the aligned-only baselines predict on
        the other test rows: a random class (the reference) or the majority
        training class.
    """

    num_parties: int | None = Field(default=None, ge=2, le=1000)
    split: Literal["even", "dirichlet", "patches"] | None = None
    alpha: float = Field(default=1.0, gt=0, allow_inf_nan=True)
    train_missing: str = "mcar:0.5"
    test_missing: str | list[str] = "mcar:0.0"
    label_budget: Samples | None = None
    label_rows: Literal["active", "all"] = "active"
    train_rows: Samples | None = None
    test_rows: Samples | None = None
    validation_fraction: float | None = Field(default=None, ge=0, lt=1)
    protocol: Literal["tuned", "paper"] = "tuned"
    unaligned_prediction: Literal["random", "majority"] = "random"

    @property
    def validation_share(self) -> float:
        """``validation_fraction``, else 0.2 under the tuned protocol and 0 under the paper one."""
        if self.validation_fraction is not None:
            return self.validation_fraction
        return 0.0 if self.protocol == "paper" else 0.2

    def parties(self, dataset: str) -> int:
        """K for ``dataset``: ``num_parties``, else 4 for images and 8 for tabular data."""
        if self.num_parties is not None:
            return self.num_parties
        return 4 if dataset in VERTICAL_IMAGE_DATASETS else 8

    def test_settings(self) -> list[str]:
        """The test-time missingness specifications, in order."""
        return [self.test_missing] if isinstance(self.test_missing, str) else list(self.test_missing)


class ClientsAtRound(Section):
    """A set of clients and a round (for arrivals, departures, failures).

    Parameters
    ----------
    clients : list of int
        Client ids, each in 0..``partition.num_clients - 1``.
    round : int
        The round (counted from 1) at which it happens.
    """

    clients: list[NonNegativeInt] = Field(min_length=1)
    round: Rounds


class FederationSection(Section):
    """How rounds run.

    Parameters
    ----------
    engine : {"inprocess", "flower-simulation", "flower"}, default "inprocess"
        Where clients run: in this process; as virtual nodes of Flower's
        simulation (Ray); or as the SuperNodes of a running Flower deployment
        (``fedmosaic run --superlink`` or ``fedmosaic deploy``). Only the
        federated setting uses Flower; the centralized and local baselines,
        which involve one site, run in process.
    rounds : int, default 20
        Number of rounds (at most 100,000).
    fraction : float, default 1.0
        Share of available clients sampled per round, in (0, 1].
    clients_per_round : int or None, default None
        Exact number of clients per round (overrides ``fraction``), at most
        the number of clients.
    min_replies : int, default 1
        Fewest replies a round needs; otherwise it is skipped.
    dropout : float, default 0.0
        Probability that a sampled client fails to reply, in [0, 1).
    arrivals : list of {clients, round}, default []
        Clients that join at a later round (they receive nothing before);
        the round is at most ``rounds``.
    departures : list of {clients, round}, default []
        Clients gone from a round on (a round at most ``rounds``).
    failures : list of {clients, round}, default []
        Clients that fail to reply in a given round (at most ``rounds``).
    evaluate_every : int, default 1
        Evaluate every this many rounds (and after the last).
    threads : int, default 1
        PyTorch threads for training and evaluation. One is fastest for the
        small models of federated clients and never oversubscribes the cores
        when other work runs beside; raise it for large models (at most 256).
    target_accuracy : float or None, default None
        When set, each run reports the first round whose accuracy reaches it
        (``rounds_to_target``; ``null``, shown as "not reached", when none does).
    max_reply_bytes : int, default 268435456
        Largest reply a client may send (256 MiB); larger replies are rejected.
    max_examples : int, default 1000000000
        Largest plausible ``num_examples`` in a reply.
    retries : int, default 0
        Quorum policy: a round without ``min_replies`` valid replies is rolled
        back and tried again this many times with clients sampled afresh,
        then skipped (0: skipped at once).
    audit : bool, default false
        Write the message audit: ``messages/<run>-<job>.jsonl`` in the output
        folder, one line per message with its arrays' names, shapes, dtypes
        and bytes, its config keys and metrics (never array contents); on
        own tables also ``messages/scaling.jsonl`` or ``messages/alignment.jsonl``,
        the exchange that prepared the data.
    workers : int or None, default None
        Worker processes that run a round's clients in parallel, each client
        always in the same worker; results are identical to one process.
        Default: one per core when a round has more than one client (never
        more than a round's clients), else 1; 1 runs the clients one after
        another in the calling process.
    client_cache : int, default 32
        Clients whose logic (model, data tensors) each process keeps built
        between rounds; the least recently used are rebuilt when sampled
        again (costs time, never results).
    client_memory_mb : float, default 1024
        Memory each process gives to the states clients keep between rounds
        (e.g. optimizer moments); past it the least recently used go to disk.
    reply_timeout_s : float, default 300.0
        Flower engines: longest wait, in seconds, for the replies of one
        exchange; clients that have not replied by then count as dropouts.
    ray_address : str or None, default None
        ``flower-simulation`` only: the Ray cluster to run on (``"auto"``: the
        cluster this machine has joined); none starts Ray on this machine.
    """

    engine: Literal["inprocess", "flower-simulation", "flower"] = "inprocess"
    rounds: Rounds = 20
    fraction: float = Field(default=1.0, gt=0, le=1)
    clients_per_round: Clients | None = None
    min_replies: Clients = 1
    dropout: float = Field(default=0.0, ge=0, lt=1)
    arrivals: list[ClientsAtRound] = Field(default_factory=list)
    departures: list[ClientsAtRound] = Field(default_factory=list)
    failures: list[ClientsAtRound] = Field(default_factory=list)
    evaluate_every: Rounds = 1
    threads: Threads = 1
    target_accuracy: float | None = Field(default=None, gt=0, le=1)
    max_reply_bytes: int = Field(default=256 * 2**20, ge=1, le=2**36)
    max_examples: int = Field(default=10**9, ge=1, le=10**12)
    retries: int = Field(default=0, ge=0, le=100)
    audit: bool = False
    workers: Threads | None = None
    client_cache: Clients = 32
    client_memory_mb: float = Field(default=1024.0, gt=0, le=2**20)
    reply_timeout_s: float = Field(default=300.0, gt=0, le=7 * 86400)
    ray_address: str | None = None


class AggregationSection(Section):
    """How the server combines the clients' arrays, name by name (a method that would skip a rule refuses it).

    Parameters
    ----------
    rule : {"mean", "median", "trimmed-mean"}, default "mean"
        The example-weighted mean, the coordinate-wise median, or the
        coordinate-wise mean after dropping ``trim`` of the values at each end
        (the robust rules ignore the clients' claimed example counts).
    trim : float, default 0.2
        ``trimmed-mean`` only: share dropped at each end, in [0, 0.5).
    clip_norm : float or None, default None
        Bound each client's update (what it sends minus what it received) to
        this L2 norm per module (layer) before combining; none when unset.
    secure : bool, default False
        Secure aggregation: the server receives masked uploads only and
        learns the example-weighted mean of the updates, never one client's
        (with ``rule = 'mean'`` and no ``clip_norm``; see the reliability guide).
    secure_threshold : float, default 0.66
        With ``secure``: share of a round's sampled clients that must take
        part in every step (rounded up, at least 2), in (0, 1]; with fewer
        the round is skipped. Fewer colluding clients than that learn nothing
        of another client's update.
    secure_range : float, default 64.0
        With ``secure``: each coordinate of an update is clipped to
        ``[-secure_range, secure_range]`` and encoded in steps of
        ``secure_range / 2^31``, from 1e-3 to 1e6.
    """

    rule: Literal["mean", "median", "trimmed-mean"] = "mean"
    trim: float = Field(default=0.2, ge=0, lt=0.5)
    clip_norm: float | None = Field(default=None, gt=0, le=MAX_NORM)
    secure: bool = False
    secure_threshold: float = Field(default=0.66, gt=0, le=1)
    secure_range: float = Field(default=64.0, ge=1e-3, le=MAX_NORM)


class PrivacySection(Section):
    """Client-level differential privacy of the aggregate (a method that cannot honour it refuses it).

    Parameters
    ----------
    noise_multiplier : float, default 0.0
        Gaussian noise on each module's sum of clipped updates, in units of
        ``clip_norm``; 0 turns client-level DP off, otherwise from 0.01 to 1000. The aggregate is then the
        unweighted mean of the clipped updates, and each round records the
        (epsilon, delta) spent so far (``dp_epsilon``), from Opacus's RDP
        accountant.
    target_epsilon : float or None, default None
        Instead of ``noise_multiplier``: the noise that spends this epsilon
        over ``federation.rounds`` rounds (Opacus's search), from 0.01 to 100;
        one the search cannot reach with a noise multiplier up to 1000 is refused.
    clip_norm : float, default 1.0
        Bound on the L2 norm of a client's whole update (split evenly over
        the model's modules).
    delta : float, default 1e-5
        Target delta, in (0, 1).
    """

    noise_multiplier: float = Field(default=0.0, ge=0, le=MAX_NOISE)
    target_epsilon: float | None = Field(default=None, ge=MIN_EPSILON, le=MAX_EPSILON)
    clip_norm: float = Field(default=1.0, gt=0, le=MAX_NORM)
    delta: float = Field(default=1e-5, gt=0, lt=1)

    @property
    def enabled(self) -> bool:
        """Whether client-level DP is on."""
        return self.noise_multiplier > 0 or self.target_epsilon is not None


class AttackSection(Section):
    """Simulated hostile clients (federated runs), to measure robustness.

    Parameters
    ----------
    fraction : float, default 0.0
        Share of the clients that are hostile, in [0, 1), drawn from the seed.
    kind : str, default "sign-flip"
        What their replies become: ``sign-flip`` or ``scale`` (x100) of the
        update; ``nan``, ``inf``, ``wrong-shape``, ``unknown-name``,
        ``oversized``, or ``malformed`` (one of these per client); for
        F-CMs ``reversed-graph`` or ``random-graph`` confidence matrices.
        A method whose replies the kind cannot alter refuses it (e.g. a
        vertical method ``sign-flip``, which needs the model in the replies).
    """

    fraction: float = Field(default=0.0, ge=0, lt=1)
    kind: Literal[
        "sign-flip",
        "scale",
        "nan",
        "inf",
        "wrong-shape",
        "unknown-name",
        "oversized",
        "malformed",
        "reversed-graph",
        "random-graph",
    ] = "sign-flip"


class RunSection(Section):
    """One method to run (several are compared on identical partitions).

    Parameters
    ----------
    name : str
        Label in results and reports (unique within the experiment).
    method : str
        A registered method (``fedmosaic presets`` lists them).
    setting : {"federated", "centralized", "local"}, default "federated"
        ``centralized`` pools all clients' data into one client;
        ``local`` trains each client alone and reports mean and std.
    params : table, default {}
        The method's own parameters (e.g. ``mu`` for FedProx).
    """

    name: str = Field(min_length=1)
    method: str
    setting: Literal["federated", "centralized", "local"] = "federated"
    params: dict[str, Any] = Field(default_factory=dict)


class GridSection(Section):
    """A grid of experiments: the experiment runs once per combination of values.

    Parameters
    ----------
    axes : table of key to array
        Keys as for ``--set`` (``*`` stands for every entry of a list, e.g.
        ``"runs.*.params.model.family"``) and the values each takes.
    rows : str
        The axis whose values group the table's rows (one row per run within).
    columns : str
        The axis whose values are the table's columns.
    metric : str, default "accuracy"
        Final metric in each cell, as a percentage, mean ± std over the other
        axes (e.g. seeds).
    secondary : str or None, default "coverage"
        Final metric shown in parentheses, as a percentage (empty: none).
    compare : str or None, default None
        A run's name: the results count the cells (combinations of the axes
        other than ``seed``, seeds averaged) where it is best and its mean
        margin over the best other run, overall and per axis value.
    compare_metrics : list of str or None, default None
        The final metrics compared (default: ``metric``); each is one more
        cell axis, named ``metric`` (e.g. one accuracy per test setting).
    """

    axes: dict[str, list[Any]] = Field(min_length=1)
    rows: str
    columns: str
    metric: str = "accuracy"
    secondary: str | None = "coverage"
    compare: str | None = None
    compare_metrics: list[str] | None = None
