"""Write the example tables (``python -m fedmosaic.examples.generate``); deterministic.

asia: 4,000 patients sampled from the asia network (pgmpy), inputs the
8-wide noisy autoencoder code of every concept but the task
(:func:`fedmosaic.data.bayesnet.sample_concept_splits`). The 3,200 train and
validation patients are split over three hospitals, each labelling
different concepts: hospital 0 smoke, lung and bronc; hospital 1 asia, tub
and either, with its own graph belief; hospital 2 smoke, bronc and either,
the last for about 70% of its patients only. Every hospital labels dysp, the
task. xray is left out: it is no ancestor of dysp. The 800 test patients
form the coordinator's test table; 20 more rows, without labels, are the
new patients.

vertical: scikit-learn's breast cancer table (569 patients, 30 features);
the clinic (active party) holds 450 patients with 8 texture, smoothness,
symmetry and fractal dimension features (weak predictors alone) and the
diagnosis; the lab 420 patients with 12 size and shape features, 380 of
them the clinic's;
the imaging centre 400 patients with the 10 ``worst_*`` features, 340 of
them the clinic's. IDs are random six-digit numbers, rows in a different
order at each party.

images: scikit-learn's 8x8 digits over three sites, each holding some
digits far more than others, as ``.npz`` arrays.

views: scikit-learn's digits seen by three cameras (:func:`digit_views`):
camera 0 (the active party, with the labels) the left 3 columns of 1,400
digits, camera 1 the right 5 columns of 1,200 (1,100 of them camera 0's),
camera 2 the digit turned a quarter and pooled to 4x4, of 1,050 (900 of
them camera 0's); integer IDs, rows in a different order at each camera.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedmosaic.data.bayesnet import ConceptDataset, sample_concept_splits

HOSPITAL_CONCEPTS = (
    ("smoke", "lung", "bronc", "dysp"),
    ("asia", "tub", "either", "dysp"),
    ("smoke", "bronc", "either", "dysp"),
)
"""The concepts each hospital labels."""
SCHEMA_CONCEPTS = ("asia", "tub", "smoke", "lung", "bronc", "either", "dysp")
"""Every concept of the example's schema (xray is no ancestor of dysp)."""
HOSPITAL_1_BELIEF = (("asia", "tub", 0.9), ("tub", "either", 0.95), ("either", "dysp", 0.8))
"""Hospital 1's graph belief: ``(parent, child, confidence)``."""
LATENT = 8
SEED = 7
VERTICAL_COLUMNS = (
    (
        "mean_texture",
        "mean_smoothness",
        "mean_symmetry",
        "mean_fractal_dimension",
        "texture_error",
        "smoothness_error",
        "symmetry_error",
        "fractal_dimension_error",
    ),
    (
        "mean_radius",
        "mean_perimeter",
        "mean_area",
        "mean_compactness",
        "mean_concavity",
        "mean_concave_points",
        "compactness_error",
        "concavity_error",
        "radius_error",
        "perimeter_error",
        "area_error",
        "concave_points_error",
    ),
    tuple(
        f"worst_{name}"
        for name in (
            "radius",
            "texture",
            "perimeter",
            "area",
            "smoothness",
            "compactness",
            "concavity",
            "concave_points",
            "symmetry",
            "fractal_dimension",
        )
    ),
)
"""Columns of the clinic (texture, smoothness, symmetry: weak alone), the lab (size and shape) and the imaging centre."""
CLINIC_ROWS = 450
PASSIVE_ROWS = ((380, 40), (340, 60))
"""For the lab and the imaging centre: patients shared with the clinic, and patients of their own."""


def write_asia(folder: Path) -> None:
    """The three hospitals' tables, hospital 1's belief, the test table and new patients."""
    folder.mkdir(parents=True, exist_ok=True)
    splits = sample_concept_splits("asia", seed=SEED, n_samples=4000, latent_dim=LATENT)
    features = [f"f{k}" for k in range(LATENT)]

    def frame(data: ConceptDataset, concepts: tuple[str, ...]) -> pd.DataFrame:
        table = pd.DataFrame(np.round(data.x, 4), columns=features)
        for name in concepts:
            codes = data.columns([name])[:, 0]
            table[name] = [data.states[name][c] for c in codes]
        return table

    pooled = pd.concat([frame(splits.train, SCHEMA_CONCEPTS), frame(splits.val, SCHEMA_CONCEPTS)], ignore_index=True)
    rng = np.random.default_rng(SEED)
    for hospital, rows in enumerate(np.array_split(rng.permutation(len(pooled)), len(HOSPITAL_CONCEPTS))):
        table = pooled.iloc[np.sort(rows)][features + list(HOSPITAL_CONCEPTS[hospital])].reset_index(drop=True)
        if hospital == 2:
            table.loc[rng.random(len(table)) < 0.3, "either"] = ""
        table.to_csv(folder / f"hospital-{hospital}.csv", index=False)
    pd.DataFrame(HOSPITAL_1_BELIEF, columns=["parent", "child", "confidence"]).to_csv(
        folder / "hospital-1-graph.csv", index=False
    )
    test = frame(splits.test, SCHEMA_CONCEPTS)
    test.iloc[20:].to_csv(folder / "test.csv", index=False)
    test.iloc[:20][features].to_csv(folder / "new-patients.csv", index=False)


def write_vertical(folder: Path) -> None:
    """The clinic's, the lab's and the imaging centre's tables."""
    from sklearn.datasets import load_breast_cancer

    folder.mkdir(parents=True, exist_ok=True)
    data = load_breast_cancer()
    rng = np.random.default_rng(SEED)
    ids = np.array([f"{v:06d}" for v in rng.choice(10**6, size=len(data.target), replace=False)])
    columns = [name.replace(" ", "_") for name in data.feature_names]
    order = rng.permutation(len(ids))
    clinic_rows, others = order[:CLINIC_ROWS], order[CLINIC_ROWS:]
    for name, party_columns, (shared, own) in zip(
        ("clinic", "lab", "imaging"), VERTICAL_COLUMNS, ((CLINIC_ROWS, 0), *PASSIVE_ROWS), strict=True
    ):
        chosen = clinic_rows if name == "clinic" else rng.choice(clinic_rows, size=shared, replace=False)
        rows = rng.permutation(np.concatenate([chosen, rng.choice(others, size=own, replace=False)]))
        table = pd.DataFrame(
            np.round(data.data[rows][:, [columns.index(c) for c in party_columns]], 5), columns=party_columns
        )
        table.insert(0, "patient_id", ids[rows])
        if name == "clinic":
            table["diagnosis"] = np.array(["malignant", "benign"])[data.target[rows]]
        table.to_csv(folder / f"{name}.csv", index=False)


IMAGE_SITES = 3
IMAGE_TEST_ROWS = 360
IMAGE_SKEW = 0.5
"""Dirichlet concentration of each image site's classes: every site holds every digit, some far more than others."""


def write_images(folder: Path) -> None:
    """Three sites' 8x8 digit images (scikit-learn's, as ``x`` of shape (n, 1, 8, 8) and ``y``), a test file and new images."""
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(SEED)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = rng.permutation(len(y))
    test, new, train = (
        order[:IMAGE_TEST_ROWS],
        order[IMAGE_TEST_ROWS : IMAGE_TEST_ROWS + 5],
        order[IMAGE_TEST_ROWS + 5 :],
    )
    np.savez_compressed(folder / "test.npz", x=x[test], y=y[test])
    np.save(folder / "new-images.npy", x[new])
    shares = rng.dirichlet([IMAGE_SKEW] * IMAGE_SITES, size=10)
    site = np.array([rng.choice(IMAGE_SITES, p=shares[label]) for label in y[train]])
    for k in range(IMAGE_SITES):
        rows = train[site == k]
        np.savez_compressed(folder / f"site-{k}.npz", x=x[rows], y=y[rows])


VIEW_ROWS = ((1400, 0), (1100, 100), (900, 150))
"""For each camera: digits shared with camera 0 (the active party's, all its rows), and digits of its own."""


def digit_views(images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three cameras' views of ``(n, 1, 8, 8)`` digits: the left 3 columns, the right 5, and the digit turned a quarter and pooled to 4x4.

    Examples
    --------
    >>> [view.shape for view in digit_views(np.zeros((2, 1, 8, 8), np.float32))]
    [(2, 1, 8, 3), (2, 1, 8, 5), (2, 1, 4, 4)]
    """
    turned = np.rot90(images, k=1, axes=(2, 3))
    pooled = turned.reshape(len(images), 1, 4, 2, 4, 2).mean(axis=(3, 5))
    return images[..., :3].copy(), images[..., 3:].copy(), pooled.astype(np.float32)


def write_views(folder: Path) -> None:
    """Three cameras' views of scikit-learn's digits (``.npz`` of ``ids``, ``x`` and, camera 0's, ``y``), partly the same digits."""
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(SEED)
    digits = load_digits()
    views = digit_views((digits.images / 16.0).astype(np.float32)[:, None])
    ids = rng.choice(10**6, size=len(digits.target), replace=False)
    order = rng.permutation(len(ids))
    active, others = order[: VIEW_ROWS[0][0]], order[VIEW_ROWS[0][0] :]
    for camera, (view, (shared, own)) in enumerate(zip(views, VIEW_ROWS, strict=True)):
        chosen = active if camera == 0 else rng.choice(active, size=shared, replace=False)
        rows = rng.permutation(np.concatenate([chosen, rng.choice(others, size=own, replace=False)]))
        labels = {"y": digits.target[rows].astype(np.int64)} if camera == 0 else {}
        np.savez_compressed(folder / f"camera-{camera}.npz", ids=ids[rows], x=view[rows], **labels)


if __name__ == "__main__":
    root = Path(__file__).parent
    write_asia(root / "asia")
    write_vertical(root / "vertical")
    write_images(root / "images")
    write_views(root / "views")
