"""Export of text models from token ids: the tokenizer stays in Python (``TextEncoder.tokenized``,
its vocabulary in ``tokenizer()`` for a server), the graph reads ``tokens`` (B, N) padded with
<pad>; the set-size axis is the token axis."""

from __future__ import annotations

import pytest
import torch

from vecset.backbone import Backbone
from vecset.backbone.tracing import NotExportable
from vecset.encoders import TextEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.program import ServedModel, input_axes, served_batch

SENTENCES = [["I", "saw", "a", "saw"], ["the", "dog", "ran"], ["a", "dog", "saw", "the", "cat", "run"],
             ["cats"], ["The", "saw", "ran", "a", "b"]]


def test_token_labeling_export_equals_pytorch_on_padded_ids(check_exports):
    torch.manual_seed(0)
    encoder = TextEncoder(16, level="word", lowercase=True)
    encoder.build_vocab([" ".join(s) for s in SENTENCES[:3]])  # "cats", "b": unknown -> <unk>
    model = TaskModule(encoder, Backbone(16, 1, 2, 2.0), LabelingHead(16, 4))
    batch = lambda idx: served_batch(encoder, {"text": [SENTENCES[i] for i in idx], "ids": torch.tensor(idx)})  # noqa: E731
    example = batch([0, 1, 2])  # 3 sets of up to 6 tokens, padded
    assert example["tokens"].shape == (3, 6) and "text" not in example
    served = check_exports(model, example, [batch([3, 4]), batch([1]), batch([4, 3, 0, 2])])
    assert served.inputs == ["tokens"] and served.outputs == ["logits"]
    assert input_axes(served, example) == {"tokens": {0: "batch", 1: "set_size"}}
    # the exported ids are the ones the model makes from the strings: the same logits
    with torch.no_grad():
        from_strings = model.head.served_outputs(model(
            {"text": [SENTENCES[i] for i in (3, 4)], "ids": torch.tensor([3, 4])}))["logits"]
        assert torch.equal(served(batch([3, 4])["tokens"])[0], from_strings)


def test_text_classifier_export_and_its_tokenizer(check_exports):
    torch.manual_seed(0)
    encoder = TextEncoder(16, level="char", embedding="onehot")
    encoder.build_vocab(["abcab", "cde"])
    model = TaskModule(encoder, Backbone(16, 1, 2, 2.0, cls_token=True), SequenceHead(16, 3, pooling="cls"))
    batch = lambda texts: served_batch(encoder, {"text": texts, "ids": torch.arange(len(texts))})  # noqa: E731
    served = check_exports(model, batch(["ab", "cdeab", "e"]), [batch(["abcde", "a"]), batch(["dd", "ccc", "x", "ab"])])
    assert served.inputs == ["tokens"] and served.outputs == ["logits"]
    spec = encoder.tokenizer()
    assert spec["vocab"][:4] == ["<pad>", "<unk>", "<bos>", "<eos>"] and spec["pad"] == 0 and spec["unk"] == 1
    ids = [spec["vocab"].index(c) for c in "cab"]  # a server tokenizing from the spec alone
    assert ids == batch(["cab"])["tokens"][0].tolist()


def test_seq2seq_text_model_stays_refused():
    # grapheme to phoneme: the encoder's ids export, the head's greedy / beam search does not
    from vecset.heads.seq2seq.decoders import TransformerDecoder
    from vecset.heads.seq2seq.head import Seq2SeqHead

    torch.manual_seed(0)
    encoder = TextEncoder(16, level="char")
    encoder.build_vocab(["cat", "dog"])
    head = Seq2SeqHead(16, TransformerDecoder(16, 1, 2, 2.0), max_len=4)
    head.build_vocab(["K AE T", "D AO G"])
    model = TaskModule(encoder, Backbone(16, 1, 2), head)
    batch = served_batch(encoder, {"text": ["cat", "do"], "target": ["K AE T", "D AO"], "ids": torch.arange(2)})
    with pytest.raises(NotExportable, match="greedy or beam search"):
        ServedModel.of(model, batch)


def test_a_learned_position_table_bounds_the_set_size(check_exports):
    from vecset.pipelines.export.program import export_program, max_set_size

    torch.manual_seed(0)
    encoder = TextEncoder(16, level="char", positional="learned", max_len=12)
    encoder.build_vocab(["abcde"])
    model = TaskModule(encoder, Backbone(16, 1, 2), LabelingHead(16, 3))
    batch = lambda texts: served_batch(encoder, {"text": texts, "ids": torch.arange(len(texts))})  # noqa: E731
    served = check_exports(model, batch(["abc", "abcde", "a"]), [batch(["a" * 12, "b"])], onnx=False)
    assert max_set_size(served) == 12
    with pytest.raises(Exception, match=r"Guard failed: .*size\(\)\[1\] <= 12"):
        export_program(served, batch(["abc", "abcde", "a"])).module()(batch(["a" * 13, "b"])["tokens"])
