"""Sites' own tables: reading CSV and Parquet, checking against the schema, reading only what is asked."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedmosaic.data.tables.schema import TablesSection, resolve_paths
from fedmosaic.data.tables.sites import Sites, read_concept_site
from fedmosaic.errors import FedmosaicError


def _tables(folder: Path, **site) -> TablesSection:
    return TablesSection(
        kind="concepts",
        features=["a", "b"],
        task="y",
        concepts={"c": ["lo", "hi"], "d": ["no", "yes"], "y": ["0", "1"]},
        sites=[{"file": str(folder / "site.csv"), **site}],
        test=str(folder / "test.csv"),
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    frame = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0], "b": [0.5, 0.0, -1.0], "c": ["lo", "", "hi"], "d": ["", "", ""], "y": ["0", "1", "1"]}
    )
    frame.to_csv(tmp_path / "site.csv", index=False)
    return tmp_path


def test_a_site_labels_the_concepts_whose_column_has_a_value_and_empty_cells_are_unlabeled(site: Path) -> None:
    # Execute
    data = read_concept_site(_tables(site), 0)
    # Assert
    assert data.names == ("c", "y")
    assert data.values.tolist() == [[0, 0], [-1, 1], [1, 1]]
    assert data.x.dtype == np.float32
    assert data.belief is None


def test_a_parquet_table_reads_as_its_csv(site: Path) -> None:
    # Prepare
    pd.read_csv(site / "site.csv", dtype={"y": str}, keep_default_na=False).to_parquet(site / "site.parquet")
    # Execute
    from_csv = read_concept_site(_tables(site), 0)
    from_parquet = read_concept_site(_tables(site), 0, file=str(site / "site.parquet"))
    # Assert
    assert (from_csv.x == from_parquet.x).all()
    assert (from_csv.values == from_parquet.values).all()


def test_a_site_belief_is_read_over_the_concepts_it_labels(site: Path) -> None:
    # Prepare
    (site / "graph.csv").write_text("parent,child,confidence\nc,y,0.75\n")
    # Execute
    data = read_concept_site(_tables(site, graph=str(site / "graph.csv")), 0)
    # Assert
    assert data.belief is not None
    assert data.belief.values.tolist() == [[0.0, 0.75], [0.0, 0.0]]


def test_sites_are_read_on_first_use_and_a_node_reads_only_its_own() -> None:
    # Prepare
    reads: list[int] = []
    sites = Sites(3, lambda k: reads.append(k) or k, available=frozenset({2}))
    # Execute
    value = sites[2], sites[2]
    # Assert
    assert value == (2, 2)
    assert reads == [2]
    with pytest.raises(FedmosaicError, match="site 0's table is not on this node"):
        sites[0]


def test_table_paths_are_relative_to_the_experiment_file() -> None:
    # Execute
    source = resolve_paths({"tables": {"parties": [{"file": "a.csv", "features": ["x"]}]}}, Path("/srv/exp"))
    # Assert
    assert source["tables"]["parties"] == [{"file": "/srv/exp/a.csv", "features": ["x"]}]
