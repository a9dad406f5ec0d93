"""Everything a method, model or dataset of your own is written against, from one module.

A plugin package (``docs/plugins.md``) imports from here and registers its
components through entry points in its ``pyproject.toml``::

    [project.entry-points."fedmosaic.methods"]
    fedadam = "fedmosaic_fedadam.method:FEDADAM"

- **A method** is a :class:`Method`: a name, a one-line summary, the kind of
  task it is built from (``"classification"``: a :class:`HorizontalTask`,
  ``"concepts"``: a :class:`ConceptTask`, ``"vertical"``: a
  :class:`VerticalTask`), its parameters (a :class:`MethodParams`
  subclass), a builder ``build(task, params) -> (server, client factory)``,
  and the runtime features it honours (:class:`Capabilities`). The server
  is a :class:`ServerLogic`, each client a :class:`ClientLogic`; they
  exchange :class:`Message` objects of named arrays. A horizontal method
  usually extends :class:`FedAvgServer` and :class:`FedAvgClient` and
  overrides one step. Arrays a server keeps beside the model go into its
  :class:`ServerState` under a prefix (:func:`prefixed`, :func:`unprefixed`).
- **A model** is a :class:`ModelArchitecture`: ``build(input_shape=...,
  num_classes=..., **args)`` returning an ``nn.Module`` of logits.
- **A dataset** is a :class:`Dataset`; :func:`array_dataset` makes one from a
  function returning :class:`DatasetSplits` of :class:`ArrayDataset`.
- **Its tests** call :func:`fedmosaic.testing.check_method`, the contract
  every built-in method passes.

Examples
--------
A method that is FedAvg under another name, registered for this session:

>>> from fedmosaic.plugin import METHODS, Capabilities, FedAvgParams, Method, build_fedavg
>>> mine = Method("my-fedavg", "FedAvg, registered by hand", "classification", FedAvgParams, build_fedavg,
...               Capabilities(robust_aggregation=True))
>>> METHODS.register(mine, package="my-package")
>>> METHODS.package("my-fedavg")
'my-package'
>>> METHODS.unregister("my-fedavg")
"""

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.array_datasets import array_dataset
from fedmosaic.experiments.datasets import DATASETS, Dataset
from fedmosaic.federation import (
    ArraySpec,
    ClientContext,
    ClientLogic,
    ClientState,
    Message,
    ReplySpec,
    RoundContext,
    ServerLogic,
    ServerState,
)
from fedmosaic.methods.architectures import MODELS, ModelArchitecture
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, prefixed, unprefixed
from fedmosaic.methods.base import Built, Capabilities, Method, MethodParams
from fedmosaic.methods.concepts.task import ConceptTask
from fedmosaic.methods.horizontal.fedavg.build import build_fedavg
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient, ModelFactory
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer, training_metrics
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.task import HorizontalTask, Pretraining
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.vertical.task import VerticalTask

__all__ = [
    "DATASETS",
    "METHODS",
    "MODELS",
    "ArrayDataset",
    "ArraySpec",
    "Built",
    "Capabilities",
    "ClientContext",
    "ClientLogic",
    "ClientState",
    "ConceptTask",
    "ConfigError",
    "Dataset",
    "DatasetSplits",
    "FedAvgClient",
    "FedAvgParams",
    "FedAvgServer",
    "HorizontalTask",
    "Message",
    "Method",
    "MethodParams",
    "ModelArchitecture",
    "ModelFactory",
    "Pretraining",
    "Probe",
    "ReplySpec",
    "RoundContext",
    "ServerLogic",
    "ServerState",
    "TrainParams",
    "VerticalTask",
    "array_dataset",
    "build_fedavg",
    "load_arrays",
    "model_to_arrays",
    "prefixed",
    "training_metrics",
    "unprefixed",
]
