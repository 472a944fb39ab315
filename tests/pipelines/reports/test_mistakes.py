"""The worst-mistakes grid: the most confident wrong predictions over the whole loader."""

from __future__ import annotations

import torch
from torch import nn

from vecset.pipelines.images.mistakes import worst_mistakes, worst_mistakes_figure
from vecset.pipelines.reports.outputs import ScoredBatch


class Fixed(nn.Module):
    """Returns the logits stored for each id (batch["ids"])."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits
        self.anchor = nn.Parameter(torch.zeros(()))

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    def forward(self, batch: dict) -> torch.Tensor:
        return self.logits[batch["ids"]]


def _loader(n: int, batch: int):
    y = torch.arange(n) % 3
    return [{"image": torch.full((len(idx), 1, 4, 4), float(idx[0])), "y": y[idx], "ids": idx}
            for idx in torch.arange(n).split(batch)]


def _outputs(model: Fixed, loader) -> list[ScoredBatch]:
    """The test pass as the report context keeps it: each batch with the head's logits."""
    return [ScoredBatch(b, None, None, model(b)) for b in loader]


def test_most_confident_wrong_predictions_across_batches_first():
    n = 9
    y = torch.arange(n) % 3
    logits = torch.zeros(n, 3)
    logits[torch.arange(n), y] = 1.0  # correct by default
    for i, (pred, score) in {1: (0, 5.0), 4: (2, 2.0), 8: (1, 9.0), 6: (1, 3.0)}.items():
        logits[i, pred] = score  # wrong, with this confidence
    model = Fixed(logits).train()
    got = worst_mistakes(_outputs(model, _loader(n, 4)), n=3)
    assert [m["id"] for m in got] == [8, 1, 6]  # ordered by probability, across the three batches
    assert [m["pred"] for m in got] == [1, 0, 1] and [m["y"] for m in got] == [2, 1, 0]
    assert got[0]["prob"] == torch.softmax(logits[8], -1).max().item()
    assert abs(got[0]["prob_true"] - torch.softmax(logits[8], -1)[2].item()) < 1e-7


def test_grid_is_written_with_and_without_mistakes(tmp_path):
    logits = torch.eye(3)[torch.arange(6) % 3] * 4
    names = ["a", "b", "c"]
    display = lambda img: img[0].numpy()  # noqa: E731
    none = worst_mistakes_figure(_outputs(Fixed(logits), _loader(6, 4)), names, display)
    assert none.axes[0].figure._suptitle.get_text() == "no test mistakes"
    logits[2] = torch.tensor([5.0, 0.0, 0.0])
    some = worst_mistakes_figure(_outputs(Fixed(logits), _loader(6, 4)), names, display, n=4)
    titled = [ax.get_title() for ax in some.axes if ax.get_title()]
    assert titled == [f"true c ({torch.softmax(logits[2], -1)[2]:.2f})\npred a ({torch.softmax(logits[2], -1)[0]:.2f})"]
    assert len(worst_mistakes(_outputs(Fixed(logits), _loader(6, 4)), n=4)) == 1
