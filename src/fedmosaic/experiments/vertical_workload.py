"""Prepare a vertical task: blocks per party, train and test masks, the label budget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedmosaic.data.missingness import MaskModel, Missingness, fit_mechanism, parse_missingness
from fedmosaic.data.vertical import block_image_shape, dirichlet_column_blocks, even_column_blocks, image_patch_blocks
from fedmosaic.data.vertical_data import (
    Likelihood,
    Shape,
    VerticalData,
    column_blocks,
    hold_out_validation,
    vertical_split,
)
from fedmosaic.experiments.config import ExperimentConfig, VerticalSection
from fedmosaic.experiments.datasets import load_splits
from fedmosaic.experiments.job import Job
from fedmosaic.experiments.run_encoders import check_own_models
from fedmosaic.federation import Schedule, derive_rng
from fedmosaic.federation.audit import MessageRecord
from fedmosaic.federation.message import ConfigValue
from fedmosaic.methods.vertical.task import VerticalTask

TEST_ROWS = "vertical-test-rows"
"""Header entry of a job on parties' own tables: the test rows (positions, never IDs)."""
IMAGE_LABEL_BUDGET = 1000
TABULAR_LABEL_BUDGET = 500


@dataclass(frozen=True)
class VerticalWorkload:
    """The data of a vertical experiment, shared by all its runs.

    Parameters
    ----------
    data : VerticalData
        Blocks, masks and labels.
    figures : tuple, default ()
        Pictures for the report (none).
    audit : MessageRecord or None, default None
        Parties' own tables with ``federation.audit``: the audit of the row
        alignment, written to the output folder's ``messages/`` once the run
        has claimed it.
    test_rows : numpy.ndarray or None, default None
        Parties' own tables: the test rows' positions in the active party's
        row order, which every message of a job carries to the passive
        parties' nodes (:meth:`header`).
    scales : tuple of (mean, std) or None, default ()
        Parties' own tables: each party's standardisation of its raw columns
        (None where this process does not know it: a passive party's on a
        Flower engine).
    """

    data: VerticalData
    figures: tuple[tuple[str, str, bytes], ...] = ()
    audit: MessageRecord | None = None
    test_rows: np.ndarray | None = None
    scales: tuple[tuple[np.ndarray, np.ndarray] | None, ...] = ()

    def header(self) -> dict[str, ConfigValue]:
        """What every message of a job carries for the nodes: the test rows of parties' own tables."""
        return {} if self.test_rows is None else {TEST_ROWS: [int(row) for row in self.test_rows]}

    def jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """One federation: the active party as server, every passive party asked in every exchange.

        An exchange goes on with ``federation.min_replies`` valid replies: a
        party whose reply is rejected counts as absent from that exchange's rows.
        """
        passive = self.data.num_parties - 1
        section = config.vertical or VerticalSection()  # own tables ([tables]) take the tuned protocol
        task = VerticalTask(
            self.data,
            config.federation.rounds,
            config.federation.evaluate_every,
            protocol=section.protocol,
            unaligned_prediction=section.unaligned_prediction,
        )
        return [Job("federated", task, Schedule(num_clients=passive, min_replies=config.federation.min_replies))]


def prepare_vertical(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> VerticalWorkload:
    """Load the dataset, cut it into party blocks and draw masks and labels (all seeded)."""
    section = config.vertical
    assert section is not None
    splits = load_splits(config, data_dir)
    image = splits.train.x.ndim == 4
    train_x, train_y = _rows(splits.train.x, splits.train.y, section.train_rows, config.seed, "train")
    test_x, test_y = _rows(splits.test.x, splits.test.y, section.test_rows, config.seed, "test")
    parties = section.parties(config.data.dataset)
    columns = party_columns(section, parties, splits.train.x.shape, image, derive_rng(config.seed, "vertical-columns"))
    if not image:
        mean, spread = train_x.mean(axis=0), train_x.std(axis=0)
        spread[spread == 0] = 1.0
        train_x, test_x = (train_x - mean) / spread, (test_x - mean) / spread
    reference = column_blocks(train_x.astype(np.float32), columns)
    missingness = parse_missingness(section.train_missing, "vertical.train_missing")
    train = vertical_split(
        train_x.astype(np.float32),
        train_y,
        columns,
        missingness,
        derive_rng(config.seed, "vertical", "train"),
        section.label_budget or (IMAGE_LABEL_BUDGET if image else TABULAR_LABEL_BUDGET),
        shared_mechanism(reference, missingness, config.seed),
        label_rows=section.label_rows,
    )
    train, validation = hold_out_validation(
        train, section.validation_share, derive_rng(config.seed, "vertical", "validation")
    )
    tests = {}
    for text in section.test_settings():
        missingness = parse_missingness(text, "vertical.test_missing")
        rng = derive_rng(config.seed, "vertical", "test", missingness.label)
        mechanism = shared_mechanism(reference, missingness, config.seed)
        tests[missingness.label] = vertical_split(
            test_x.astype(np.float32), test_y, columns, missingness, rng, mechanism=mechanism
        )
    likelihood: Likelihood = "bernoulli" if image else "gaussian"
    shapes = image_shapes(columns, splits.train.x.shape) if image else None
    data = VerticalData(train, tests, splits.train.num_classes, likelihood, validation, shapes)
    check_own_models(config, data.party_shapes, data.num_classes)
    return VerticalWorkload(data)


def shared_mechanism(reference: list[np.ndarray], missingness: Missingness, seed: int) -> MaskModel | None:
    """The one model of a mechanism for training and test rows, fitted on the training rows.

    Its score directions come from a generator keyed by the seed and the
    mechanism only, so every MAR (or MNAR) setting of a run shares them, and
    training and test rows of one setting share directions, standardization
    and offsets. None for KEEP, which has no model.
    """
    if missingness.mechanism == "keep":
        return None
    return fit_mechanism(reference, missingness, derive_rng(seed, "vertical-mechanism", missingness.mechanism))


def party_columns(
    section: VerticalSection, parties: int, shape: tuple[int, ...], image: bool, rng: np.random.Generator
) -> list[np.ndarray]:
    """Column positions of each party (images: flat pixel positions)."""
    split = section.split or ("patches" if image else "even")
    num_features = int(np.prod(shape[1:]))
    if split == "patches":
        return image_patch_blocks(shape[-2], shape[-1], parties)
    if split == "dirichlet":
        return dirichlet_column_blocks(num_features, parties, section.alpha, rng)
    return even_column_blocks(num_features, parties)


def image_shapes(columns: list[np.ndarray], shape: tuple[int, ...]) -> tuple[Shape, ...]:
    """Each party's pixels as an image (``(1, rows, cols)``) where they are a rectangle of a one-channel image, else flat."""
    rectangles = [block_image_shape(cols, (shape[-2], shape[-1])) if shape[1] == 1 else None for cols in columns]
    return tuple(rectangle or (len(cols),) for rectangle, cols in zip(rectangles, columns, strict=True))


def _rows(x: np.ndarray, y: np.ndarray, keep: int | None, seed: int, purpose: str) -> tuple[np.ndarray, np.ndarray]:
    flat = x.reshape(len(x), -1)
    if keep is None or keep >= len(x):
        return flat, y
    chosen = np.sort(derive_rng(seed, "vertical-rows", purpose).choice(len(x), size=keep, replace=False))
    return flat[chosen], y[chosen]
