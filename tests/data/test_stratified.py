"""The stratified split draws the rows scikit-learn's stratified ``train_test_split`` draws, without importing it."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from fedmosaic.data.stratified import stratified_split

LABELS = {
    "balanced": np.repeat(np.arange(4), 25),
    "skewed": np.repeat(np.arange(5), [40, 17, 9, 3, 2]),
    "tied remainders": np.repeat(np.arange(7), 3),
    "shuffled strings": np.random.default_rng(0).permutation(np.repeat(np.array(["a", "b", "c"]), [11, 7, 5])),
}


@pytest.mark.parametrize("name", LABELS)
@pytest.mark.parametrize("test_fraction", [0.1, 0.25, 0.5, 0.7])
@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_it_draws_the_rows_scikit_learn_draws(name: str, test_fraction: float, seed: int) -> None:
    # Prepare
    labels = LABELS[name]
    rows = np.arange(len(labels))
    n_test = math.ceil(test_fraction * len(labels))
    if min(n_test, len(labels) - n_test) < len(set(labels)):
        pytest.skip("scikit-learn refuses a part with fewer rows than classes (as stratified_split does)")
    expected_train, expected_test = train_test_split(rows, test_size=test_fraction, random_state=seed, stratify=labels)

    # Execute
    train, test = stratified_split(labels, test_fraction, seed)

    # Assert
    assert train.tolist() == expected_train.tolist()
    assert test.tolist() == expected_test.tolist()


def test_a_part_too_small_for_every_class_is_refused() -> None:
    # Execute, Assert
    with pytest.raises(ValueError, match=r"^6 train and 15 test rows cannot each hold all 7 classes$"):
        stratified_split(LABELS["tied remainders"], 0.7, seed=0)


def test_the_digits_load_without_importing_scikit_learn() -> None:
    # Prepare
    probe = (
        "import sys\n"
        "from fedmosaic.data.digits import load_digits_splits\n"
        "splits = load_digits_splits(test_fraction=0.25, seed=0)\n"
        "print(len(splits.train), len(splits.test), 'sklearn' in sys.modules, 'scipy' in sys.modules)\n"
    )

    # Execute
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)

    # Assert
    assert done.stdout.split() == ["1347", "450", "False", "False"]
