"""Datasets and how they are shared among federated participants.

Loading: :func:`~fedmosaic.data.catalog.load_dataset` returns
:class:`~fedmosaic.data.arrays.DatasetSplits` of
:class:`~fedmosaic.data.arrays.ArrayDataset`. Horizontal partitioning
(clients hold different samples): :func:`~fedmosaic.data.partition.partition`
and the partitioners it dispatches to. Vertical partitioning (parties hold
different features): :mod:`fedmosaic.data.vertical`. The package imports none
of its modules, so that checking a configuration (``[tables]``, the vertical
missingness settings) loads no array library.
"""
