"""bench/speech_voices.py's figure: families ordered from the hardest held-out family to the
easiest, each model's values in that order, a partial run's missing cells NaN, and --plot-only
refusing a file without rows."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import speech_voices as sv  # noqa: E402


def row(model: str, fam: str, vd: float, iv: float) -> tuple[str, dict]:
    return f"{model} / {fam}", {"model": model, "held_out": fam, "voice_disjoint_frame_accuracy": vd,
                                "in_voice_frame_accuracy": iv}


def test_families_go_from_the_hardest_and_each_model_keeps_its_values():
    rows = dict([row("self-attention", "kal", 0.60, 0.80), row("MLP", "kal", 0.50, 0.75),
                 row("self-attention", "slt", 0.40, 0.82), row("MLP", "slt", 0.45, 0.78),
                 row("self-attention", "enus", 0.90, 0.77)])  # MLP / enus missing: a partial run
    fams, series = sv.plot_data(rows)
    assert fams == ["slt", "kal", "enus"]  # mean voice-disjoint 0.425, 0.55, 0.90
    assert series["self-attention"] == ([0.40, 0.60, 0.90], [0.82, 0.80, 0.77])
    vd, iv = series["MLP"]
    assert vd[:2] == [0.45, 0.50] and iv[:2] == [0.78, 0.75]
    assert math.isnan(vd[2]) and math.isnan(iv[2])


def test_plot_only_redraws_beside_the_json_and_refuses_a_file_without_rows(tmp_path, monkeypatch):
    out = tmp_path / "v.json"
    out.write_text(json.dumps({"held_out": "lovo_synth", "results": dict([row("BiLSTM", "flite", 0.5, 0.8)])}))
    monkeypatch.setattr(sys, "argv", ["speech_voices.py", "--plot-only", "--out", str(out)])
    sv.main()
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out.write_text(json.dumps({"choice": {}}))
    with pytest.raises(SystemExit, match="no 'results' rows"):
        sv.main()
    monkeypatch.setattr(sys, "argv", ["speech_voices.py", "--plot-only", "--out", str(tmp_path / "none.json")])
    with pytest.raises(SystemExit, match="none.json: no such file"):
        sv.main()
