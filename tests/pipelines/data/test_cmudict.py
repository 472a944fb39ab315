"""G2P on CMUdict: the dictionary reader, the word split, and the CLI end to end (fit on
300 words, results and alignment plots, reload from a plain-data checkpoint, predict on a
word file)."""

import contextlib
import csv
import json
from pathlib import Path

import pytest
import torch

from vecset.encoders.text import read_dict_file, read_word_file
from vecset.pipelines.cli import run_cli
from vecset.pipelines.text.cmudict import CMUDictDataModule
from vecset.pipelines.training.task import TaskModule

ROOT = Path(__file__).resolve().parents[3]
DEBUG = str(ROOT / "configs" / "g2p_debug.yaml")

SAMPLE = """;;; a CMUdict-format sample
TOMATO  T AH0 M EY1 T OW2
TOMATO(2)  T AH0 M AA1 T OW2
READ  R IY1 D
READ(2)  R EH1 D
CAT  K AE1 T
"""


def test_read_dict_file_variants_and_malformed_line(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_text(SAMPLE)
    d = read_dict_file(p)
    assert d["tomato"] == [["T", "AH0", "M", "EY1", "T", "OW2"], ["T", "AH0", "M", "AA1", "T", "OW2"]]
    assert list(d) == ["tomato", "read", "cat"]
    p.write_text(SAMPLE + "DOG\n")
    with pytest.raises(ValueError, match=rf"{p}:7: expected 'WORD PHONE"):
        read_dict_file(p)
    w = tmp_path / "words.txt"
    w.write_text("cat\n\ndog\n")
    with pytest.raises(ValueError, match=rf"{w}:2: empty word"):
        read_word_file(w)


def test_split_by_word_is_seeded_and_disjoint(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_text("".join(f"W{i}  AH{i % 3} B\n" for i in range(200)) + "W0(2)  AH1 B\n")
    dm = CMUDictDataModule(dict_file=str(p), stress=False, pronunciations="all")
    dm.setup("fit")
    words = {k: {it["text"] for it in v} for k, v in dm.splits.items()}
    assert [len(words[k]) for k in ("train", "val", "test")] == [180, 10, 10]
    assert not (words["train"] & words["val"]) and not (words["train"] & words["test"])
    w0 = [it for s in dm.splits.values() for it in s if it["text"] == "w0"]
    assert all(it["references"] == ["AH B"] for it in w0) and len(w0) == 1  # merged without stress
    dm2 = CMUDictDataModule(dict_file=str(p), stress=True, pronunciations="all")
    dm2.setup("fit")
    assert {k: {it["text"] for it in v} for k, v in dm2.splits.items()} == words  # same seed, same split
    w0s = [it for s in dm2.splits.values() for it in s if it["text"] == "w0"]
    assert w0s[0]["references"] == ["AH0 B", "AH1 B"]
    assert len(w0s) == (2 if "w0" in words["train"] else 1)  # all pronunciations in training only


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    root = tmp_path_factory.mktemp("g2p")
    with contextlib.chdir(root):
        run_cli(["fit", "--config", DEBUG, "--trainer.enable_progress_bar=false"])
    return root / "runs" / "g2p_debug" / "version_0"


def test_fit_writes_metrics_and_alignment_plots(fitted):
    res = json.loads((fitted / "results.json").read_text())
    assert res["monitor"] == "val_per"
    assert 0 <= res["test"]["test_per"] <= 1.5 and 0 <= res["test"]["test_wer"] <= 1
    plots = [Path(p).name for p in res["plots"]]
    assert sum(p.startswith("alignment_") for p in plots) == 2
    best = fitted.parents[2] / res["checkpoint"]  # paths are relative to the run's cwd
    ckpt = torch.load(best, map_location="cpu", weights_only=True)  # plain data only
    assert ckpt["state_dict"]["encoder.vocab_bytes"].dtype == torch.uint8
    model = TaskModule.load_from_checkpoint(best, map_location="cpu").eval()
    assert model.encoder.vocab.tokens[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert "AH" in model.head.vocab.tokens and "AH0" not in model.head.vocab.tokens


def test_predict_on_a_word_file(fitted, tmp_path, monkeypatch):
    words = tmp_path / "words.txt"
    words.write_text("Cat\nbanana\nzyx\n")
    monkeypatch.chdir(tmp_path)
    run_cli(["predict", "--config", DEBUG, "--ckpt_path", str(fitted / "checkpoints" / "last.ckpt"),
             "--data.init_args.predict_file", str(words), "--trainer.enable_progress_bar=false"])
    rows = list(csv.DictReader(open(tmp_path / "runs" / "g2p_debug" / "version_0" / "predictions.csv")))
    assert [r["word"] for r in rows] == ["Cat", "banana", "zyx"]
    assert all(r["finished"] in ("True", "False") for r in rows)
    vocab = TaskModule.load_from_checkpoint(fitted / "checkpoints" / "last.ckpt", map_location="cpu").head.vocab
    for r in rows:
        assert set(r["pronunciation"].split()) <= set(vocab.tokens[4:]) | {"<unk>"}


def test_describe_names_the_word_of_every_split_with_a_predict_file(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_text("".join(f"W{i}  AH B\n" for i in range(40)))
    words = tmp_path / "words.txt"
    words.write_text("zebra\nyak\n")
    dm = CMUDictDataModule(dict_file=str(p), predict_file=str(words))
    dm.setup("fit")  # a config may name the predict file while fitting
    assert all(dm.describe(it["id"]) == it["text"] for split in ("train", "val", "test") for it in dm.splits[split])
    dm.setup("predict")
    assert [dm.describe(it["id"]) for it in dm.splits["predict"]] == ["zebra", "yak"]
    assert all(dm.describe(it["id"]) == it["text"] for it in dm.splits["train"])  # still the dictionary's words


def test_invalid_utf8_in_the_dictionary_or_word_file_names_file_and_line(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_bytes("CAT  K AE1 T\nCAF\u00c9  K AE0 F EY1\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{p}:2: not valid UTF-8 \(byte 0xc9 at column 4: "):
        read_dict_file(p)
    w = tmp_path / "words.txt"
    w.write_bytes("cat\ncaf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{w}:2: not valid UTF-8 \(byte 0xe9 at column 4: "):
        read_word_file(w)


def test_predict_with_beam_search_on_a_greedy_checkpoint(fitted, tmp_path, monkeypatch):
    """Decode settings are chosen at predict time: the checkpoint was trained greedy (beam 1,
    max_len 20); the model that predicts has the command line's."""
    words = tmp_path / "words.txt"
    words.write_text("Cat\nbanana\n")
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["predict", "--config", DEBUG, "--ckpt_path", str(fitted / "checkpoints" / "last.ckpt"),
                   "--data.init_args.predict_file", str(words), "--trainer.enable_progress_bar=false",
                   "--model.init_args.head.init_args.beam_size=3", "--model.init_args.head.init_args.max_len=12",
                   "--model.init_args.head.init_args.length_penalty=0.5"])
    head = cli.model.head
    assert (head.beam_size, head.max_len, head.length_penalty) == (3, 12, 0.5)
    assert cli.model.hparams["head"]["init_args"]["beam_size"] == 3
    rows = list(csv.DictReader(open(tmp_path / "runs" / "g2p_debug" / "version_0" / "predictions.csv")))
    assert [r["word"] for r in rows] == ["Cat", "banana"]


def test_fit_max_letters_keeps_long_words_for_test_only(tmp_path, capsys):
    p = tmp_path / "dict.txt"
    # words of 2 to 11 letters, 20 of each length
    p.write_text("".join(f"{'X' * (2 + i % 10)}{chr(65 + i // 10)}  AH B\n" for i in range(200)))
    full = CMUDictDataModule(dict_file=str(p))
    full.setup("fit")
    dm = CMUDictDataModule(dict_file=str(p), fit_max_letters=6)
    dm.setup("fit")
    for split in ("train", "val"):
        kept = [it["text"] for it in full.splits[split] if len(it["text"]) <= 6]
        assert [it["text"] for it in dm.splits[split]] == kept  # the same words, in the same order
    assert dm.splits["test"] == full.splits["test"]
    assert max(len(it["text"]) for it in dm.splits["test"]) > 6
    dropped = sum(len(it["text"]) > 6 for it in full.splits["train"])
    assert f"CMUdict train: fit_max_letters=6: {dropped} of {len(full.splits['train'])} words left out" in capsys.readouterr().out
    with pytest.raises(ValueError, match="fit_max_letters must be >= 0"):
        CMUDictDataModule(fit_max_letters=-1)
