"""FedCFA parameters: defaults, validation, and documentation the reference generator reads."""

import pytest
from pydantic import ValidationError

from fedmosaic.experiments.reference import describe_default, describe_type, parameter_docs
from fedmosaic.methods.fedcfa import FedCFAParams


def test_defaults_follow_the_reference() -> None:
    # Execute
    params = FedCFAParams()
    # Assert
    assert (params.k, params.chunk_size, params.split, params.num_chunks) == (24, 128, None, None)
    weights = (params.ce_weight, params.positive_weight, params.negative_weight, params.fdc_weight)
    assert weights == (1.0, 5.0, 5.0, 0.1)
    assert params.average_dataset == "previous"


def test_every_field_is_documented_and_describable() -> None:
    # Execute
    docs = parameter_docs(FedCFAParams)
    # Assert
    assert set(docs) == set(FedCFAParams.model_fields)
    for name, field in FedCFAParams.model_fields.items():
        assert describe_type(field.annotation, field.metadata)
        assert describe_default(field)


def test_fixed_average_dataset_needs_num_chunks() -> None:
    # Execute / Assert
    with pytest.raises(ValidationError, match="num_chunks"):
        FedCFAParams(average_dataset="fixed")
    assert FedCFAParams(average_dataset="fixed", num_chunks=8).num_chunks == 8


@pytest.mark.parametrize(
    "bad", [{"k": 0}, {"chunk_size": 0}, {"fdc_weight": -0.1}, {"average_dataset": "all"}, {"topk": 3}]
)
def test_invalid_values_are_rejected(bad: dict) -> None:
    # Execute / Assert
    with pytest.raises(ValidationError):
        FedCFAParams(**bad)
