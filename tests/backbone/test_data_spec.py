"""DataSpec, the hand-over from data to model: derived fields, frozen, and the errors that
name what is missing and who needed it."""

import dataclasses

import pytest
import torch

from vecset.contracts.data_spec import DataSpec


def test_defaults_describe_nothing_and_the_spec_is_frozen():
    spec = DataSpec()
    assert (spec.num_classes, spec.feature_width, spec.fit, spec.where) == (None, 0, False, "")
    assert DataSpec(class_names=["a", "b", "c"], task="pos").num_classes == 3
    assert DataSpec(task="pos").where == "task 'pos': "
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.fit = True  # one description, handed over as it is


def test_missing_parts_name_the_task_the_source_and_the_taker():
    spec = DataSpec(source="Digits", task="img", train_texts={"text": ["a"]})
    assert spec.texts("text", "TextEncoder") == ["a"]
    with pytest.raises(ValueError, match=r"^task 'img': TextEncoder builds a vocabulary from the training "
                                         r"texts of batch field 'words' but Digits gives none for that field "
                                         r"\(it gives \['text'\]\)"):
        spec.texts("words", "TextEncoder")
    with pytest.raises(ValueError, match=r"^task 'img': Digits gives no training targets for the regression "
                                         "scaler of Head"):
        spec.targets("Head")
    with pytest.raises(ValueError, match=r"^task 'img': Enc fits its normalization on the training frames but "
                                         "Digits gives none"):
        spec.inputs("Enc")
    y = torch.ones(3, 1)
    assert DataSpec(train_targets=y).targets("Head") is y
