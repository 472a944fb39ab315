"""Export of the debug job's model (VectorEncoder -> Backbone -> LabelingHead), and what the
export refuses."""

from __future__ import annotations

import pytest
import torch
from conftest import padded

from vecset.backbone import Backbone
from vecset.backbone.tracing import NotExportable, exporting, is_exporting
from vecset.encoders import TextEncoder, VectorEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.program import ServedModel, export_program, input_axes


def debug_model(**backbone) -> TaskModule:
    torch.manual_seed(0)
    return TaskModule(VectorEncoder(2, 16), Backbone(16, 2, 4, 2.0, **backbone), LabelingHead(16, 2))


def test_exporting_context_nests_and_resets():
    assert not is_exporting()
    with exporting():
        with exporting():
            assert is_exporting()
        assert is_exporting()
    assert not is_exporting()


def test_traced_on_an_unpadded_batch_holds_on_padded_ones(check_exports):
    # torch.jit.trace baked the traced batch's "no padding" into the graph (issue #32): here the
    # example has no padding and the other batches have, of other sizes, one of a single set
    example = padded([7, 7, 7], 2)
    served = check_exports(debug_model(), example, [padded([9, 3], 2, seed=1), padded([5, 1, 4, 2, 2], 2, seed=2),
                                                   padded([6], 2, seed=3)])
    assert served.inputs == ["x", "mask"] and served.outputs == ["logits"]
    assert input_axes(served, example) == {"x": {0: "batch", 1: "set_size"}, "mask": {0: "batch", 1: "set_size"}}


def test_refused_with_the_reason():
    # strings the encoder reads (not the ids of ``served_batch``: tests/.../test_export_text.py)
    torch.manual_seed(0)
    text = TaskModule(TextEncoder(16, level="char"), Backbone(16, 1, 2), LabelingHead(16, 3))
    text.encoder.build_vocab(["abc"])
    batch = {"text": ["ab", "c"], "ids": torch.arange(2)}
    with pytest.raises(NotExportable, match=r"reads batch\['text'\] \(list\), not tensors"):
        ServedModel.of(text, batch)
    model = debug_model()
    with pytest.raises(ValueError, match="export needs >= 2 sets, >= 2 vectors and a batch size other than the set size"):
        export_program(ServedModel.of(model, padded([3, 3, 2], 2)), padded([3, 3, 2], 2))


def test_head_without_served_outputs_is_refused():
    class Plain(SequenceHead):
        def served_outputs(self, out):
            return super(SequenceHead, self).served_outputs(out)  # Head's: none declared

    torch.manual_seed(0)
    model = TaskModule(VectorEncoder(2, 8), Backbone(8, 1, 2), Plain(8, 3))
    with pytest.raises(NotExportable, match="Plain declares no served outputs"):
        ServedModel.of(model, padded([3, 2], 2))


def test_step_by_step_decoding_is_refused():
    from vecset.heads.seq2seq.head import Seq2SeqHead

    with pytest.raises(NotExportable, match="greedy or beam search"):
        Seq2SeqHead.served_outputs(object.__new__(Seq2SeqHead), {})
