"""CoNLL-U token labeling: reading (multiword tokens skipped and counted, malformed lines
named by file and line), and the POS config end to end on the shipped sample, where one
word form takes two tags ("I saw a saw")."""

import json
from pathlib import Path

import pytest

from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.conllu import UPOS, read_conllu

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
