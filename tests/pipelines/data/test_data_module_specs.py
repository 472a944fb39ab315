"""What each data module hands over to its model (``data_spec(stage)``): class names at every
stage; at fit only, what the model learns from the training split (targets, texts, frames)."""

from pathlib import Path

import torch
from pytorch_lightning import LightningDataModule

from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechSplits
from vecset.pipelines.text.cmudict import CMUDictDataModule
from vecset.pipelines.text.conllu import CoNLLUDataModule
from vecset.pipelines.training.hand_over import hand_over

ROOT = Path(__file__).resolve().parents[3]


def test_synthetic_sets_hand_over_class_names_or_regression_targets():
    dm = SyntheticSetDataModule(n_train=10, n_val=2, n_test=2)
    dm.setup("fit")
    spec = dm.data_spec("fit")
    assert (spec.source, spec.fit, spec.class_names, spec.train_targets) == \
        ("SyntheticSetDataModule", True, ["below", "above"], None)
    reg = SyntheticSetDataModule(n_train=10, n_val=2, n_test=2, target="mean")
    reg.setup("fit")
    y = reg.data_spec("fit").train_targets
    torch.testing.assert_close(y, torch.stack([it["x"][:, 0].mean() for it in reg.sets["train"].items]))
    assert reg.data_spec("test").train_targets is None and not reg.data_spec("test").fit


def test_cmudict_hands_over_the_training_words_and_phones(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_text("".join(f"W{i}  AH{i % 3} B\n" for i in range(40)))
    dm = CMUDictDataModule(dict_file=str(p))
    dm.setup("fit")
    texts = dm.data_spec("fit").train_texts
    assert texts["text"] == [it["text"] for it in dm.splits["train"]] and len(texts["text"]) == 36
    assert texts["target"][:1] == [dm.splits["train"][0]["target"]] and "AH B" in texts["target"]
    assert dm.data_spec("predict").train_texts == {}


def test_conllu_hands_over_word_forms_for_the_text_field():
    sample = str(ROOT / "data" / "conllu" / "sample.conllu")
    dm = CoNLLUDataModule(sample, sample, sample)
    dm.setup("fit")
    spec = dm.data_spec("fit")
    assert spec.num_classes == 17 and list(spec.train_texts) == ["text"]
    assert spec.train_texts["text"][0] == dm.splits["train"][0]["forms"]


def test_speech_hands_over_the_training_frames():
    dm = SpeechFramesDataModule(root=str(ROOT / "data" / "speech"), splits=SpeechSplits(max_utterances=2))
    dm.setup("fit")
    spec = dm.data_spec("fit")
    assert len(spec.train_inputs) == 2 and spec.train_inputs[0] is dm.sets["train"].items[0].x
    assert spec.num_classes == 50


def test_a_plain_lightning_data_module_describes_only_its_name():
    class Plain(LightningDataModule):
        pass

    class Taker:  # records what it was handed
        def receive(self, spec):
            self.spec = spec

    enc, head = Taker(), Taker()
    hand_over(Plain(), "fit", enc, head, task="t")
    assert enc.spec is head.spec
    assert (enc.spec.source, enc.spec.task, enc.spec.fit, enc.spec.class_names) == ("Plain", "t", True, None)
