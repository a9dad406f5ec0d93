"""The tasks horizontal classification methods are built from, shared by every builder.

A builder takes a :class:`HorizontalTask` (the clients' data, the test set,
the model and training parameters) and may hand the server a
:class:`Pretraining`; both live here, below the methods and the registry that
names them, so a method's module never imports the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.methods.horizontal.models import Classifier, ModelParams
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.train_params import TrainParams


@dataclass(frozen=True)
class Pretraining:
    """Central training of the initial global model before round 1.

    Parameters
    ----------
    data : ArrayDataset
        A small pooled sample (e.g. Simpson-MNIST's pretraining sample).
    params : TrainParams
        How to train on it (its ``epochs``).
    """

    data: ArrayDataset
    params: TrainParams


@dataclass(frozen=True)
class HorizontalTask:
    """What a horizontal classification method is built from.

    Parameters
    ----------
    clients : list of ArrayDataset
        Each client's private training data, by client id.
    test : ArrayDataset
        The global test set.
    model : ModelParams
        Architecture of the model.
    train : TrainParams
        Local training hyper-parameters.
    pretrain : ArrayDataset or None, default None
        A pooled sample the server trains the initial model on for
        ``train.pretrain_epochs`` epochs before round 1.
    probes : tuple of Probe, default ()
        Further measurements of the global model at every evaluation
        (Simpson-MNIST's colour reliance).
    """

    clients: list[ArrayDataset]
    test: ArrayDataset
    model: ModelParams
    train: TrainParams
    pretrain: ArrayDataset | None = None
    probes: tuple[Probe, ...] = ()

    def pretraining(self) -> Pretraining | None:
        """The central pretraining of the initial model, if any."""
        if self.pretrain is None or self.train.pretrain_epochs == 0:
            return None
        return Pretraining(self.pretrain, self.train.model_copy(update={"epochs": self.train.pretrain_epochs}))

    def model_factory(self) -> Classifier:
        """The task's architecture, which builds a fresh model when called."""
        return Classifier(self.model, tuple(self.test.x.shape[1:]), self.test.num_classes)
