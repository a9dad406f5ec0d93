"""The shapes: images whose concepts can be read from the pixels, drawn the same for the same seed."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fedmosaic.data.shapes import IMAGE_SHAPE, SHAPES_TASK, STATES, render, shape_splits, shapes_network
from fedmosaic.errors import ConfigError


@pytest.fixture(scope="module")
def splits():  # type: ignore[no-untyped-def]
    return shape_splits(seed=0, n_samples=1000)


def test_the_splits_hold_flattened_16x16_rgb_images_and_every_concept(splits) -> None:  # type: ignore[no-untyped-def]
    # Assert: 70/10/20 of 1,000 images, 3 x 16 x 16 values a row, every node a column
    assert (len(splits.train), len(splits.val), len(splits.test)) == (700, 100, 200)
    assert splits.train.x.shape == (700, 3 * 16 * 16)
    assert splits.train.x.dtype == np.float32
    assert IMAGE_SHAPE == (3, 16, 16)
    assert splits.train.names == tuple(STATES)
    assert splits.task == SHAPES_TASK
    assert SHAPES_TASK not in splits.inputs
    assert set(splits.graph_edges) == set(shapes_network().edges())


def test_the_same_seed_draws_the_same_images_and_another_seed_others(splits) -> None:  # type: ignore[no-untyped-def]
    # Execute
    again, other = shape_splits(seed=0, n_samples=1000), shape_splits(seed=1, n_samples=1000)

    # Assert
    np.testing.assert_array_equal(again.train.x, splits.train.x)
    np.testing.assert_array_equal(again.test.concepts, splits.test.concepts)
    assert again.bayes_optimal_accuracy == splits.bayes_optimal_accuracy
    assert not np.array_equal(other.train.x, splits.train.x)


def test_every_drawn_concept_can_be_read_from_the_pixels(splits) -> None:  # type: ignore[no-untyped-def]
    # Prepare: a logistic regression per concept on 700 training images, from the pixels and each
    # pixel's distance to its image's median (the background: a shape may be lighter or darker than it)
    shown = [name for name in STATES if name != SHAPES_TASK]

    def features(x: np.ndarray) -> np.ndarray:
        channels = x.reshape(len(x), 3, -1)
        return np.hstack([x, np.abs(channels - np.median(channels, axis=2, keepdims=True)).reshape(len(x), -1)])

    # Execute
    accuracy = {}
    for name in shown:
        probe = LogisticRegression(max_iter=500).fit(features(splits.train.x), splits.train.columns([name])[:, 0])
        predicted = probe.predict(features(splits.test.x))
        accuracy[name] = float(np.mean(predicted == splits.test.columns([name])[:, 0]))

    # Assert: colour, position and background are near certain; shape and size, harder, well above chance
    for name in ("colour", "row", "side", "background"):
        assert accuracy[name] > 0.9, (name, accuracy[name])
    assert accuracy["size"] > 0.7
    assert accuracy["shape"] > 0.45  # three shapes: chance is a third


def test_the_task_is_not_drawn_and_its_ceiling_is_the_rule_s_nine_in_ten(splits) -> None:  # type: ignore[no-untyped-def]
    # Assert: the Bayes-optimal accuracy of the task from its parents is about 0.9 (200 test images)
    assert 0.84 < splits.bayes_optimal_accuracy < 0.96
    model = shapes_network()
    assert sorted(model.get_parents(SHAPES_TASK)) == ["colour", "row", "side"]
    assert model.get_children(SHAPES_TASK) == []


def test_a_picture_shows_its_colour_where_its_quarter_is() -> None:
    # Prepare: a large red square at the bottom right on a dark background; codes in STATES' order
    codes = np.array([[1, 0, 1, 1, 1, 0, 0]])

    # Execute
    image = render(codes, np.random.default_rng(0))[0]

    # Assert: the red channel dominates at the bottom right, the dark background at the top left
    bottom_right, top_left = image[:, 10:14, 10:14].mean(axis=(1, 2)), image[:, 2:6, 2:6].mean(axis=(1, 2))
    assert bottom_right[0] > 0.4
    assert bottom_right[0] > bottom_right[1] + 0.5
    assert top_left.max() < -0.5


@pytest.mark.parametrize("samples", [5, 0, True])
def test_too_few_samples_are_refused_naming_the_key(samples: object) -> None:
    with pytest.raises(ConfigError, match=r"data\.samples: must be an integer >= 10"):
        shape_splits(seed=0, n_samples=samples)  # type: ignore[arg-type]
