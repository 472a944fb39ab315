"""The G2P alignment report: a heatmap per test word, named after it, with the model's
training mode left as it was (the old plot left it in eval mode)."""

from __future__ import annotations

import torch

from vecset.backbone import Backbone
from vecset.encoders import TextEncoder
from vecset.heads import Seq2SeqHead, TransformerDecoder
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.text.alignment import AlignmentReport
from vecset.pipelines.text.cmudict import CMUDictDataModule
from vecset.pipelines.training.hand_over import hand_over
from vecset.pipelines.training.task import TaskModule


def test_alignment_heatmaps_of_the_first_test_words(tmp_path):
    d = tmp_path / "dict.txt"
    d.write_text("".join(f"{w}  {' '.join('AH B K'.split()[: i % 3 + 1])}\n"
                         for i, w in enumerate(f"W{c}{k}" for c in "ABCDEFGH" for k in range(5))))
    dm = CMUDictDataModule(dict_file=str(d), batch_size=8)
    dm.setup("fit")
    torch.manual_seed(0)
    model = TaskModule(TextEncoder(16, level="char", lowercase=True), Backbone(16, depth=1, heads=2),
                       Seq2SeqHead(16, TransformerDecoder(16, depth=1, heads=2, mlp_ratio=2.0), max_len=6))
    hand_over(dm, "fit", model.encoder, model.head)  # the vocabularies, as at the start of fit
    model.train()
    (default,) = default_reports(dm)
    assert isinstance(default, AlignmentReport) and default.words == 4
    report = AlignmentReport(words=2)
    paths = report.write(ReportContext(model, dm, tmp_path))
    words = [it["text"] for it in dm.splits["test"][:2]]
    assert [p.name for p in paths] == [f"alignment_{k}_{w}.png" for k, w in enumerate(words)]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert all(m.training for m in model.modules())
    assert AlignmentReport(words=0).write(ReportContext(model, dm, tmp_path)) == []
