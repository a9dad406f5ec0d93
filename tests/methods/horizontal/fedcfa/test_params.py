"""FedCFA parameters: defaults, validation, and documentation the reference generator reads."""

import pytest
from pydantic import ValidationError

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.reference import describe_default, describe_type, parameter_docs
from fedmosaic.methods.horizontal.fedcfa.params import SELECTION_RULES, FedCFAParams


def test_defaults_follow_the_reference_except_k_chosen_on_validation_data() -> None:
    # Execute
    params = FedCFAParams()
    # Assert
    assert (params.k, params.k_share, params.chunk_size, params.split, params.num_chunks) == (
        None,
        0.25,
        128,
        None,
        None,
    )
    weights = (params.ce_weight, params.positive_weight, params.negative_weight, params.fdc_weight)
    assert weights == (1.0, 5.0, 5.0, 0.1)
    assert (params.average_dataset, params.positive_rule, params.negative_rule) == (
        "cached",
        "signed-smallest",
        "signed-largest",
    )


def test_k_is_a_share_of_the_factors_unless_an_absolute_k_is_given() -> None:
    # Execute / Assert: 0.375 of 64 is the reference's 24; an absolute k is clipped to half the factors
    assert FedCFAParams(k_share=0.375).replaced(64) == 24
    assert FedCFAParams().replaced(64) == 16
    assert FedCFAParams(k_share=0.125).replaced(16) == 2
    assert FedCFAParams(k_share=0.01).replaced(16) == 1
    assert FedCFAParams(k=24).replaced(64) == 24
    assert FedCFAParams(k=24).replaced(16) == 8


def test_every_field_is_documented_and_describable() -> None:
    # Execute
    docs = parameter_docs(FedCFAParams)
    # Assert
    assert set(docs) == set(FedCFAParams.model_fields)
    for field in FedCFAParams.model_fields.values():
        assert describe_type(field.annotation, field.metadata)
        assert describe_default(field)


def test_fixed_average_dataset_needs_num_chunks() -> None:
    # Execute / Assert
    with pytest.raises(ValidationError, match="num_chunks"):
        FedCFAParams(average_dataset="fixed")
    assert FedCFAParams(average_dataset="fixed", num_chunks=8).num_chunks == 8


@pytest.mark.parametrize(
    "bad",
    [
        {"k": 0},
        {"k_share": 0.6},
        {"k_share": 0.0},
        {"scoring": "signed"},
        {"positive_rule": "smallest"},
        {"negative_rule": "magnitude"},
        {"chunk_size": 0},
        {"fdc_weight": -0.1},
        {"average_dataset": "all"},
        {"topk": 3},
    ],
)
def test_invalid_values_are_rejected(bad: dict) -> None:
    # Execute / Assert
    with pytest.raises(ValidationError):
        FedCFAParams(**bad)


@pytest.mark.parametrize("field", ["positive_rule", "negative_rule"])
def test_a_bad_selection_rule_is_refused_on_one_line_naming_the_field_and_the_rules(field: str) -> None:
    # Prepare
    source = {
        "name": "x",
        "data": {"dataset": "digits"},
        "runs": [{"name": "FedCFA", "method": "fedcfa", "params": {field: "signed-lowest"}}],
    }
    # Execute
    with pytest.raises(ConfigError) as info:
        load_config(source)
    # Assert
    message = str(info.value)
    assert info.value.field == f"runs.0.params.{field}"
    assert "\n" not in message
    assert all(rule in message for rule in SELECTION_RULES)
