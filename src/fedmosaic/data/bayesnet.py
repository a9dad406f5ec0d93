"""Concept datasets sampled from the discrete Bayesian networks that pgmpy ships.

This is the data side of F-CMs (federated concept-based models): every
variable of a bnlearn network is a *concept*, one of them is the *task*, and
the model input ``x`` is a noisy autoencoding of the other concepts.

* :func:`load_network` reads a network from the files bundled with pgmpy
  (no download).
* :func:`sample_concept_splits` draws the train, validation and test splits by
  three independent forward samplings (70/10/20), integer-codes every
  variable, and builds ``x``: an autoencoder over the one-hot encoding of every
  concept except the task is trained on the train split, its latent is put on
  unit scale per dimension (train split's mean and standard deviation), and
  ``x = (1 - s) * latent + s * N(0, 1)`` with the noise share ``s``
  (:data:`NOISE_SHARE`), standardised again with the train split's statistics.
* :func:`bayes_optimal_accuracy` is the ceiling any model can reach on the
  task when it sees every other concept: the accuracy of the argmax of
  ``P(task | all other variables)`` under the true network.

The construction of ``x`` (one-hot encoding, autoencoder, noise) lives in
:mod:`fedmosaic.data.concept_inputs`.
"""

from __future__ import annotations

import functools
import gzip
import warnings
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from fedmosaic.data._choices import unknown_choice
from fedmosaic.data.concept_inputs import (
    AUTOENCODER_BATCH,
    AUTOENCODER_EPOCHS,
    AUTOENCODER_MIN_STEPS,
    REFERENCE_MAX_EPOCHS,
    autoencoded_inputs,
    one_hot_inputs,
    probe_accuracy,
    reference_inputs,
)
from fedmosaic.data.concept_splits import ConceptDataset, ConceptSplits
from fedmosaic.data.splits_cache import cached_splits
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.seeding import derive_rng

if TYPE_CHECKING:  # pgmpy's models, readers and inference cost seconds to import: imported where a network is used
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

__all__ = [
    "CLEAN_NOISE_SHARE",
    "DEFAULT_SAMPLES",
    "DEFAULT_SAMPLE_COUNT",
    "INPUT_MODES",
    "LATENT_DIM",
    "NETWORK_TASKS",
    "NOISE_SHARE",
    "REFERENCE_NOISE_SHARE",
    "SMALL_LATENT_DIM",
    "SMALL_NETWORKS",
    "SPLIT_FRACTIONS",
    "ConceptDataset",
    "ConceptSplits",
    "bayes_optimal_accuracy",
    "forward_sample",
    "load_network",
    "network_names",
    "network_splits",
    "one_hot_inputs",
    "sample_concept_splits",
    "split_sizes",
]

NETWORK_TASKS: dict[str, str] = {
    "asia": "dysp",
    "sachs": "Akt",
    "alarm": "BP",
    "insurance": "PropCost",
    "hailfinder": "R5Fcst",
}
"""The task node of each F-CMs benchmark network (each a leaf of its network)."""

DEFAULT_SAMPLES: dict[str, int] = {
    "asia": 10000,
    "sachs": 15000,
    "alarm": 2000,
    "insurance": 10000,
    "hailfinder": 40000,
}
"""Samples drawn in total (all splits) for each F-CMs benchmark network."""

DEFAULT_SAMPLE_COUNT = 10000
"""Samples drawn for a network without an entry in :data:`DEFAULT_SAMPLES`."""

SPLIT_FRACTIONS: dict[str, float] = {"train": 0.7, "val": 0.1, "test": 0.2}
"""Share of the samples in each split; each split is an independent forward sampling."""

SMALL_NETWORKS = ("asia", "sachs")
"""Networks whose default latent size is :data:`SMALL_LATENT_DIM`; others use :data:`LATENT_DIM`."""

SMALL_LATENT_DIM = 32
LATENT_DIM = 64
NOISE_SHARE = 0.7
"""Default noise share ``s``: ``x = (1 - s) * unit-scale latent + s * N(0, 1)``.

Calibrated on asia so that a centralized CBM predicts its concepts
imperfectly (balanced concept accuracy about 0.85) and interventions help;
see ``docs/methods/fcm.md``. The reference code's ``s = 0.5`` is mixed on its
*raw* latent, not a unit-scale one, and is not this share: it amounts to a
unit-scale share of about 0.8 on asia and 0.6 on alarm and insurance (the
per-network equivalence is in ``docs/methods/fcm.md``).
"""
REFERENCE_NOISE_SHARE = 0.5
"""The reference code's noise share, mixed on the raw latent (``inputs = "reference"``)."""
INPUT_MODES = ("concepts", "reference")
"""How ``x`` is built: fedmosaic's construction, or the reference code's (:mod:`fedmosaic.data.concept_inputs`)."""
CLEAN_NOISE_SHARE = 0.0
"""The clean, easy setting: ``x`` is the latent itself and concepts are predicted almost perfectly."""


_MIN_SAMPLES = 10
_EXAMPLE_MODELS = files("pgmpy") / "utils" / "example_models"
_BIF_SUFFIX = ".bif.gz"


def network_names() -> tuple[str, ...]:
    """Names of the discrete networks bundled with pgmpy, sorted.

    pgmpy 1.1.2 ships each bnlearn discrete network as
    ``pgmpy/utils/example_models/<name>.bif.gz``; these files are what is
    listed, so every name loads offline. (``pgmpy.example_models.list_models``
    lists more, but loads them from the Hugging Face Hub.)

    Returns
    -------
    tuple[str, ...]
        E.g. ``("alarm", "andes", "asia", ...)``.

    Examples
    --------
    >>> {"asia", "sachs", "alarm", "insurance", "hailfinder"} <= set(network_names())
    True
    """
    return tuple(
        sorted(
            entry.name.removesuffix(_BIF_SUFFIX)
            for entry in _EXAMPLE_MODELS.iterdir()
            if entry.name.endswith(_BIF_SUFFIX)
        )
    )


def load_network(name: str) -> DiscreteBayesianNetwork:
    """Load a discrete Bayesian network bundled with pgmpy.

    Parameters
    ----------
    name : str
        One of :func:`network_names`, e.g. ``"asia"``.

    Returns
    -------
    DiscreteBayesianNetwork
        A fresh copy (the parsed file is cached, so later loads are fast).

    Raises
    ------
    ConfigError
        If ``name`` is not bundled (field ``data.network``), with a
        did-you-mean suggestion.

    Examples
    --------
    >>> model = load_network("asia")
    >>> len(model.nodes()), len(model.edges())
    (8, 8)
    """
    names = network_names()
    if name not in names:
        raise unknown_choice("data.network", "network", name, names)
    return _read_network(name).copy()


@functools.cache
def _read_network(name: str) -> DiscreteBayesianNetwork:
    from pgmpy.readwrite import BIFReader

    text = gzip.decompress((_EXAMPLE_MODELS / f"{name}{_BIF_SUFFIX}").read_bytes()).decode("utf-8")
    return BIFReader(string=text).get_model()


def sample_concept_splits(
    name: str,
    *,
    seed: int,
    task: str | None = None,
    n_samples: int | None = None,
    latent_dim: int | None = None,
    epochs: int | None = None,
    noise_share: float = NOISE_SHARE,
    mode: str = "concepts",
    leak_task: bool = False,
) -> ConceptSplits:
    """Sample a network's train, validation and test splits, with autoencoded inputs.

    Each split is drawn by its own forward sampling of the network from a
    generator derived from ``(seed, split)``. The inputs ``x`` come from an
    autoencoder trained on the train split only, over the one-hot encoding of
    every concept except the task (so ``x`` carries no direct copy of the
    label). Each latent dimension is put on unit scale with the train split's
    mean and standard deviation, then ``x = (1 - noise_share) * latent +
    noise_share * N(0, 1)``, standardised again with the train split's
    per-feature mean and standard deviation. Because the latent has unit
    scale, ``noise_share`` states the inputs' difficulty whatever the
    autoencoder's own scale.

    ``mode = "reference"`` builds ``x`` as the F-CMs reference code does
    instead (:func:`~fedmosaic.data.concept_inputs.reference_inputs`): an MSE
    autoencoder on the raw integer codes, fitted on every split, the noise
    mixed on its raw latent. ``leak_task`` encodes the task into ``x`` too
    (as one version of the reference does), so ``x`` carries the label.

    Parameters
    ----------
    name : str
        A network of :func:`network_names`.
    seed : int
        Seed of every draw (sampling, autoencoder, noise); the same seed gives
        the same splits.
    task : str or None, optional
        The task node; ``None`` takes :data:`NETWORK_TASKS` ``[name]``.
    n_samples : int or None, optional
        Samples in all splits together (at least 10); ``None`` takes
        :data:`DEFAULT_SAMPLES` ``[name]``, else :data:`DEFAULT_SAMPLE_COUNT`.
    latent_dim : int or None, optional
        Width of ``x``; ``None`` takes 32 for asia and sachs, 64 otherwise.
    epochs : int or None, optional
        Autoencoder training epochs (Adam, batch 256); ``None`` trains for
        :data:`AUTOENCODER_EPOCHS` epochs and at least
        :data:`AUTOENCODER_MIN_STEPS` steps (a small network, alarm's 1,400
        training rows, would otherwise take 30 steps).
    noise_share : float, optional
        Share ``s`` of noise in ``x``, in [0, 1); :data:`NOISE_SHARE` by
        default, :data:`CLEAN_NOISE_SHARE` (0) for clean inputs.
    mode : {"concepts", "reference"}, default "concepts"
        fedmosaic's construction of ``x`` or the reference code's
        (``epochs`` then bounds the reference autoencoder's epochs).
    leak_task : bool, default False
        Encode the task into ``x`` as well.

    Returns
    -------
    ConceptSplits

    Raises
    ------
    ConfigError
        For an unknown network (``data.network``), a missing or unknown task
        (``data.task``), a size out of range (``data.n_samples``,
        ``data.latent_dim``, ``data.epochs``), or a noise share outside
        [0, 1) (``data.noise_share``).

    Examples
    --------
    >>> splits = sample_concept_splits("asia", seed=0, n_samples=200, epochs=1)
    >>> len(splits.train), len(splits.val), len(splits.test), splits.train.x.shape[1]
    (140, 20, 40, 32)
    >>> splits.task, "dysp" in splits.inputs
    ('dysp', False)
    """
    names = network_names()
    if name not in names:
        raise unknown_choice("data.network", "network", name, names)
    n_samples = _resolve_count(
        "data.n_samples", n_samples, DEFAULT_SAMPLES.get(name, DEFAULT_SAMPLE_COUNT), _MIN_SAMPLES
    )
    default_latent = SMALL_LATENT_DIM if name in SMALL_NETWORKS else LATENT_DIM
    latent_dim = _resolve_count("data.latent_dim", latent_dim, default_latent, 1)
    batches = -(-split_sizes(n_samples)["train"] // AUTOENCODER_BATCH)
    default_epochs = max(AUTOENCODER_EPOCHS, -(-AUTOENCODER_MIN_STEPS // max(batches, 1)))
    epochs = _resolve_count("data.epochs", epochs, default_epochs if mode == "concepts" else REFERENCE_MAX_EPOCHS, 1)
    if mode not in INPUT_MODES:
        raise unknown_choice("data.inputs", "input mode", mode, INPUT_MODES)
    if isinstance(noise_share, bool) or not isinstance(noise_share, (int, float)) or not 0 <= noise_share < 1:
        raise ConfigError("data.noise_share", f"must be a number in [0, 1) (got {noise_share!r})")
    arguments = {
        "network": name,
        "seed": seed,
        "task": task if task is not None else NETWORK_TASKS.get(name),
        "n_samples": n_samples,
        "latent_dim": latent_dim,
        "epochs": epochs,
        "noise_share": float(noise_share),
        "mode": mode,
        "leak_task": leak_task,
    }

    def sample() -> ConceptSplits:
        # The network is read (pgmpy's parser, seconds on the large networks) only where the splits are
        # sampled: a cached task was checked when its splits were, and a wrong or missing one finds no cache.
        model = load_network(name)
        return _sample(
            model,
            seed=seed,
            task=_resolve_task(model, name, task),
            n_samples=n_samples,
            latent_dim=latent_dim,
            epochs=epochs,
            noise_share=float(noise_share),
            mode=mode,
            leak_task=leak_task,
        )

    return sample() if arguments["task"] is None else cached_splits(arguments, sample)


def _sample(
    model: DiscreteBayesianNetwork,
    *,
    seed: int,
    task: str,
    n_samples: int,
    latent_dim: int,
    epochs: int,
    noise_share: float,
    mode: str,
    leak_task: bool,
) -> ConceptSplits:
    """The splits :func:`sample_concept_splits` describes, its arguments checked and resolved."""
    names = tuple(model.nodes())
    states = {node: list(model.get_cpds(node).state_names[node]) for node in names}
    cardinalities = {node: len(values) for node, values in states.items()}
    inputs = tuple(node for node in names if leak_task or node != task)
    codes = {
        split: forward_sample(model, size, derive_rng(seed, "bayesnet", "sample", split))
        for split, size in split_sizes(n_samples).items()
    }
    latent_std = 1.0
    if mode == "reference":
        features, latent_std = reference_inputs(codes, names, inputs, latent_dim, seed, noise_share, epochs)
    else:
        features = autoencoded_inputs(codes, names, cardinalities, inputs, latent_dim, epochs, seed, noise_share)
    datasets = {
        split: ConceptDataset(features[split], codes[split], names, task, cardinalities, states) for split in codes
    }
    return network_splits(model, datasets, inputs, latent_std)


def network_splits(
    model: DiscreteBayesianNetwork,
    datasets: Mapping[str, ConceptDataset],
    inputs: tuple[str, ...],
    latent_std: float = 1.0,
) -> ConceptSplits:
    """A network's train, val and test datasets as splits, with the task's Bayes-optimal and linear-probe accuracies.

    Parameters
    ----------
    model : DiscreteBayesianNetwork
        The network the concepts were sampled from.
    datasets : mapping of str to ConceptDataset
        ``"train"``, ``"val"`` and ``"test"``, each with the task.
    inputs : tuple of str
        The concepts ``x`` carries.
    latent_std : float, default 1.0
        See :class:`ConceptSplits`.
    """
    train, test = datasets["train"], datasets["test"]
    task = train.task
    return ConceptSplits(
        train=train,
        val=datasets["val"],
        test=test,
        graph_edges=tuple(model.edges()),
        task=task,
        inputs=inputs,
        bayes_optimal_accuracy=bayes_optimal_accuracy(model, task, test.concepts, train.names),
        probe_accuracy=probe_accuracy(train.x, train.columns([task])[:, 0], test.x, test.columns([task])[:, 0]),
        latent_std=latent_std,
    )


def _resolve_task(model: DiscreteBayesianNetwork, name: str, task: str | None) -> str:
    nodes = sorted(model.nodes())
    if task is None:
        if name not in NETWORK_TASKS:
            raise ConfigError(
                "data.task",
                f"network {name!r} has no default task; give one of its nodes: {', '.join(nodes)}",
            )
        return NETWORK_TASKS[name]
    if task not in nodes:
        raise unknown_choice("data.task", "task node", task, nodes)
    return task


def _resolve_count(field: str, value: int | None, default: int, minimum: int) -> int:
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(field, f"must be an integer >= {minimum} (got {value!r})")
    return value


def split_sizes(n_samples: int) -> dict[str, int]:
    """Samples in each split for ``n_samples`` in all (:data:`SPLIT_FRACTIONS`, the test split takes the rest)."""
    train = round(n_samples * SPLIT_FRACTIONS["train"])
    val = round(n_samples * SPLIT_FRACTIONS["val"])
    return {"train": train, "val": val, "test": n_samples - train - val}


def forward_sample(model: DiscreteBayesianNetwork, size: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``size`` joint samples by ancestral (forward) sampling.

    Every node is drawn in topological order from its CPD given its parents'
    drawn values. pgmpy's own ``BayesianModelSampling.forward_sample(seed=...)``
    is deterministic too, but it seeds NumPy's *global* generator
    (``np.random.seed``); this sampler draws only from ``rng``.

    Parameters
    ----------
    model : DiscreteBayesianNetwork
        A network with a CPD for every node.
    size : int
        Number of samples.
    rng : np.random.Generator
        Source of randomness.

    Returns
    -------
    np.ndarray
        int64, shape ``(size, V)``, columns in ``model.nodes()`` order; each
        value is the position of the state in that node's CPD.

    Examples
    --------
    >>> import numpy as np
    >>> samples = forward_sample(load_network("asia"), 5, np.random.default_rng(0))
    >>> samples.shape, samples.dtype.name
    ((5, 8), 'int64')
    """
    names = list(model.nodes())
    column = {node: position for position, node in enumerate(names)}
    samples = np.zeros((size, len(names)), dtype=np.int64)
    for node in nx.lexicographical_topological_sort(model):
        probabilities = _conditional_rows(model, node, samples, column)
        cumulative = np.cumsum(probabilities, axis=1)
        draws = rng.random(size)[:, np.newaxis] * cumulative[:, -1:]
        samples[:, column[node]] = np.minimum((draws >= cumulative).sum(axis=1), probabilities.shape[1] - 1)
    return samples


def _conditional_rows(
    model: DiscreteBayesianNetwork, node: str, samples: np.ndarray, column: Mapping[str, int]
) -> np.ndarray:
    """P(node | parents) for each sample's parent codes, shape ``(n, cardinality)``.

    A CPD lists each parent's states in the parent's own order (pgmpy's
    ``check_model`` enforces it), so parent codes index the table directly.
    """
    cpd = model.get_cpds(node)
    table = np.moveaxis(np.asarray(cpd.values, dtype=np.float64), 0, -1)
    index = tuple(samples[:, column[parent]] for parent in cpd.variables[1:])
    return table[index] if index else np.broadcast_to(table, (len(samples), len(table)))


def bayes_optimal_accuracy(
    model: DiscreteBayesianNetwork, task: str, test_concepts: np.ndarray, names: Sequence[str]
) -> float:
    """Accuracy of the Bayes-optimal prediction of the task from every other concept.

    Each sample is predicted by the argmax of ``P(task | all other variables)``
    under the true network, computed exactly with pgmpy's
    ``VariableElimination``. The evidence given is the task's Markov blanket
    (parents, children and the children's other parents): the task is
    independent of every other variable given it, so the posterior is the same,
    and far fewer distinct evidence tuples need a query (one query per
    distinct tuple; ties go to the first state).

    Parameters
    ----------
    model : DiscreteBayesianNetwork
        The true network.
    task : str
        The node to predict.
    test_concepts : np.ndarray
        int64 codes, shape ``(n, len(names))``, e.g. ``splits.test.concepts``.
    names : Sequence[str]
        Column names of ``test_concepts``; they must include the task and its
        Markov blanket.

    Returns
    -------
    float
        Share of samples whose task value equals the prediction.

    Raises
    ------
    ConfigError
        If the task is not a node of ``model`` (field ``data.task``).
    FedmosaicError
        If a needed column is missing or there are no samples.

    Examples
    --------
    >>> test = sample_concept_splits("asia", seed=0, n_samples=200, epochs=1).test
    >>> accuracy = bayes_optimal_accuracy(load_network("asia"), "dysp", test.concepts, test.names)
    >>> 0.5 < accuracy <= 1.0
    True
    """
    if task not in model.nodes():
        raise unknown_choice("data.task", "task node", task, sorted(model.nodes()))
    blanket = sorted(model.get_markov_blanket(task))
    missing = [node for node in (task, *blanket) if node not in names]
    if missing or len(test_concepts) == 0:
        raise FedmosaicError(f"bayes_optimal_accuracy needs samples with columns {', '.join(missing or [task])}")
    positions = [list(names).index(node) for node in blanket]
    evidence, inverse = np.unique(test_concepts[:, positions], axis=0, return_inverse=True)
    with warnings.catch_warnings():
        # pgmpy 1.1.2's inference package imports its own deprecated estimators module.
        warnings.simplefilter("ignore", FutureWarning)
        from pgmpy.inference import VariableElimination

    inference = VariableElimination(model)
    best = np.array(
        [_most_probable(inference, model, task, dict(zip(blanket, row, strict=True))) for row in evidence],
        dtype=np.int64,
    )
    truth = test_concepts[:, list(names).index(task)]
    return float(np.mean(best[inverse.ravel()] == truth))


def _most_probable(
    inference: VariableElimination, model: DiscreteBayesianNetwork, task: str, codes: Mapping[str, int]
) -> int:
    """Code of the task's most probable state given integer-coded evidence."""
    evidence = {node: model.get_cpds(node).state_names[node][int(code)] for node, code in codes.items()}
    posterior = inference.query([task], evidence=evidence, show_progress=False)
    winner = posterior.state_names[task][int(np.argmax(posterior.values))]
    return int(model.get_cpds(task).state_names[task].index(winner))
