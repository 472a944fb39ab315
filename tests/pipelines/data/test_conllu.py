"""CoNLL-U token labeling: reading (multiword tokens skipped and counted, malformed lines
named by file and line), and the POS config end to end on the shipped sample, where one
word form takes two tags ("I saw a saw")."""

import json
import re
from pathlib import Path

import pytest

from vecset.encoders.text import UPOS, read_conllu
from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "conllu" / "sample.conllu"
CONFIG = str(ROOT / "configs" / "pos_conllu.yaml")


def test_read_sample_tags_and_skipped_multiword_tokens():
    sents, skipped = read_conllu(SAMPLE)
    assert len(sents) == 6 and skipped == {"multiword_tokens": 1, "empty_nodes": 0}
    first = sents[0]
    assert first["forms"] == ["I", "saw", "a", "saw", "."] and first["line"] == 1
    assert [UPOS[t] for t in first["tags"]] == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]
    assert sents[3]["forms"] == ["We", "do", "n't", "like", "old", "saws", "."]  # "don't" line skipped


@pytest.mark.parametrize("bad, message", [
    ("1\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_", r":4: a word line needs 10 tab-separated columns, got 9"),
    ("x\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_\t_", r":4: ID must be an integer"),
    ("1\tI\tI\tPRONOUN\tPRP\t_\t2\tnsubj\t_\t_", r":4: UPOS 'PRONOUN' is not one of the 17 tags"),
])
def test_malformed_line_names_file_and_line(tmp_path, bad, message):
    p = tmp_path / "bad.conllu"
    p.write_text("# text = Hi.\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n" + bad + "\n\n")
    with pytest.raises(ValueError, match=str(p) + message):
        read_conllu(p)


def test_pos_config_learns_the_two_tags_of_saw(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config's data paths are relative to the project
    cli = run_cli(["fit", "--config", CONFIG, "--trainer.enable_progress_bar=false",
                   f"--trainer.default_root_dir={tmp_path}", "--plots=false", "--trainer.logger=false"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["test"]["test_acc"] == 1.0  # memorizes the 6 sentences
    model = cli.model.eval()
    batch = {"text": [["I", "saw", "a", "saw", "."]]}
    tags = [UPOS[i] for i in model(batch).argmax(-1)[0].tolist()]
    assert tags == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]  # same form, two tags: context decides


def word(id_: str, form: str = "w") -> str:
    return f"{id_}\t{form}\t{form}\tX\t_\t_\t0\tdep\t_\t_"


@pytest.mark.parametrize("ids, line, message", [
    (["2", "3"], 4, "word ID 2 out of order, expected 1"),
    (["1", "3"], 5, "word ID 3 out of order, expected 2"),
    (["1", "2", "2"], 6, "word ID 2 out of order, expected 3"),
    (["2-3", "1", "2"], 4, "range 2-3 must start at the next word, 1"),
    (["1-1", "1"], 4, "range 1-1 must span two or more words"),
    (["1-2", "1", "2-3", "2", "3"], 6, "range 2-3 overlaps the range before it"),
    (["1-3", "1", "2"], 4, "range 1-3 ends past the sentence's last word, 2"),
    (["1", "2.1", "2"], 5, "empty node 2.1 must follow word 2 (the last word is 1)"),
    (["1", "1.2", "2"], 5, "empty node 1.2 out of order, expected 1.1"),
])
def test_ids_out_of_order_name_file_and_line(tmp_path, ids, line, message):
    p = tmp_path / "order.conllu"
    p.write_text("# text = Hi.\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n" + "\n".join(word(i) for i in ids) + "\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:{line}: {message}")):
        read_conllu(p)


def test_ids_restart_in_every_sentence_and_allow_ranges_and_empty_nodes(tmp_path):
    p = tmp_path / "ok.conllu"
    p.write_text("\n".join(word(i) for i in ["0.1", "1-2", "1", "2", "2.1", "2.2", "3"]) + "\n\n"
                 + "\n".join(word(i) for i in ["1", "2"]) + "\n\n")
    sents, skipped = read_conllu(p)
    assert [len(s["forms"]) for s in sents] == [3, 2] and skipped == {"multiword_tokens": 1, "empty_nodes": 3}
    assert [s["line"] for s in sents] == [1, 9]


@pytest.mark.parametrize("column, name", [(1, "FORM"), (2, "LEMMA"), (6, "HEAD")])
def test_empty_field_names_file_and_line(tmp_path, column, name):
    cols = word("2").split("\t")
    cols[column] = ""
    p = tmp_path / "empty.conllu"
    p.write_text("# text = Hi.\n" + word("1") + "\n" + "\t".join(cols) + "\n\n")
    with pytest.raises(ValueError, match=rf"{p}:3: column {column + 1} \({name}\) is empty"):
        read_conllu(p)


def test_invalid_utf8_names_file_and_line(tmp_path):
    p = tmp_path / "latin1.conllu"
    p.write_bytes(("# text = Hi.\n" + word("1") + "\n\n" + word("1", "caf\u00e9") + "\n\n").encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{p}:4: not valid UTF-8 \(byte 0xe9 at column 6: "):
        read_conllu(p)


def test_describe_names_the_file_and_line_of_every_split(tmp_path):
    from vecset.pipelines.text.conllu import CoNLLUDataModule

    files = {}
    for split, words in {"train": ["a", "b"], "val": ["c"], "test": ["d", "e", "f"]}.items():
        files[split] = tmp_path / f"{split}.conllu"
        files[split].write_text("".join(f"# sent_id = {w}\n{word('1', w)}\n\n" for w in words))
    dm = CoNLLUDataModule(str(files["train"]), str(files["val"]), str(files["test"]))
    dm.setup("fit")
    described = {split: [dm.describe(s["id"]) for s in dm.splits[split]] for split in ("train", "val", "test")}
    assert described == {"train": [f"{files['train']}:1 a", f"{files['train']}:4 b"],
                         "val": [f"{files['val']}:1 c"],
                         "test": [f"{files['test']}:1 d", f"{files['test']}:4 e", f"{files['test']}:7 f"]}
    batch = next(iter(dm.train_dataloader()))
    assert sorted(dm.describe(i) for i in batch["ids"].tolist()) == described["train"]
