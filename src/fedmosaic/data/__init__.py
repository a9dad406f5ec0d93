"""Datasets and how they are shared among federated participants.

Loading: :func:`load_dataset` returns :class:`DatasetSplits` of
:class:`ArrayDataset`. Horizontal partitioning (clients hold different
samples): :func:`partition` and the partitioners it dispatches to. Vertical
partitioning (parties hold different features): :func:`even_column_blocks`,
:func:`dirichlet_column_blocks`, :func:`image_patch_blocks`.
"""

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.catalog import DATASETS, load_dataset
from fedmosaic.data.partition import (
    SCHEMES,
    dirichlet_partition,
    iid_partition,
    partition,
    pathological_partition,
)
from fedmosaic.data.sources import resolve_data_dir
from fedmosaic.data.vertical import dirichlet_column_blocks, even_column_blocks, image_patch_blocks

__all__ = [
    "DATASETS",
    "SCHEMES",
    "ArrayDataset",
    "DatasetSplits",
    "dirichlet_column_blocks",
    "dirichlet_partition",
    "even_column_blocks",
    "iid_partition",
    "image_patch_blocks",
    "load_dataset",
    "partition",
    "pathological_partition",
    "resolve_data_dir",
]
