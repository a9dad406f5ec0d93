"""A stratified random train/test split drawn exactly as scikit-learn draws it, without importing scikit-learn.

scikit-learn's ``train_test_split(..., stratify=y, random_state=seed)`` costs
as much to import as PyTorch does (its model selection imports SciPy); the
``digits`` dataset's split needs only the draw. :func:`stratified_split`
follows ``StratifiedShuffleSplit._iter_indices``
(``sklearn/model_selection/_split.py``) and ``_approximate_mode``
(``sklearn/utils/extmath.py``) of scikit-learn 1.x step by step, with the same
``numpy.random.RandomState`` calls in the same order, so it returns the same
rows; ``tests/data/test_stratified.py`` compares the two.
"""

from __future__ import annotations

import math

import numpy as np


def stratified_split(labels: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The train and test rows of a stratified split of ``labels``: ``ceil(test_fraction * n)`` test rows.

    Raises
    ------
    ValueError
        If the train or the test part has fewer rows than there are classes (as scikit-learn refuses it).

    Examples
    --------
    >>> train, test = stratified_split(np.array([0, 0, 0, 0, 1, 1, 1, 1]), 0.5, seed=0)
    >>> sorted(np.concatenate([train, test]).tolist()), len(test)
    ([0, 1, 2, 3, 4, 5, 6, 7], 4)
    """
    n_test = math.ceil(test_fraction * len(labels))
    n_train = len(labels) - n_test
    _, y_indices, class_counts = np.unique(labels, return_inverse=True, return_counts=True)
    if min(n_train, n_test) < len(class_counts):
        raise ValueError(f"{n_train} train and {n_test} test rows cannot each hold all {len(class_counts)} classes")
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = _approximate_mode(class_counts, n_train, rng)
    t_i = _approximate_mode(class_counts - n_i, n_test, rng)
    train: list[int] = []
    test: list[int] = []
    for i in range(len(class_counts)):
        rows = class_indices[i].take(rng.permutation(class_counts[i]), mode="clip")
        train.extend(rows[: n_i[i]])
        test.extend(rows[n_i[i] : n_i[i] + t_i[i]])
    return rng.permutation(train), rng.permutation(test)


def _approximate_mode(class_counts: np.ndarray, n_draws: int, rng: np.random.RandomState) -> np.ndarray:
    """Rows to draw from each class: the floored shares, the rest to the largest remainders (ties drawn at random)."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    counts: np.ndarray = floored.astype(int)
    return counts
