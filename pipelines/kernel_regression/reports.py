"""The Nadaraya-Watson report (d2l.ai sec. 11.2): the test-grid fits of the nonparametric
kernel (w = 1) and of the learned width against the truth and the training data
(``fits.png``), their attention weights, queries x keys (``attention.png``), and their test
RMSEs on the noise-free function (``kernel_regression.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from vecset.heads.kernel_regression import nadaraya_watson
from vecset.pipelines.kernel_regression.data import target_fn
from vecset.pipelines.reports.base import Report, ReportContext, plt


class KernelRegressionReport(Report):
    """Reads the head's learned ``width`` and the data's grid and training points."""

    def write(self, ctx: ReportContext) -> list[Path]:
        dm = ctx.data
        q, k, v = dm.grid[None], dm.x_train[None], dm.y_train[None]
        width = float(ctx.model.head.width.detach().cpu())
        fits = {}
        for name, w in (("nonparametric (w=1)", 1.0), (f"learned width (w={width:.2f})", width)):
            pred, att = nadaraya_watson(q, k, v, None, w)
            fits[name] = (pred[0], att[0])
        truth = target_fn(dm.grid)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(dm.grid, truth, "k-", label="truth")
        ax.plot(dm.x_train, dm.y_train, "o", alpha=0.5, label="training data")
        for name, (pred, _) in fits.items():
            ax.plot(dm.grid, pred, label=name)
        ax.set_xlabel("x"), ax.set_ylabel("y"), ax.legend(fontsize=8)
        fig.tight_layout()
        paths = [ctx.save_figure(fig, "fits.png", dpi=100)]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, (name, (_, att)) in zip(axes, fits.items(), strict=True):
            im = ax.imshow(att, aspect="auto", cmap="Reds")
            ax.set_title(name, fontsize=9), ax.set_xlabel("training keys (sorted x)"), ax.set_ylabel("queries (grid x)")
            fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
        paths.append(ctx.save_figure(fig, "attention.png", dpi=100))
        rmse = {name: float(((pred - truth) ** 2).mean().sqrt()) for name, (pred, _) in fits.items()}
        path = ctx.out_dir / "kernel_regression.json"
        path.write_text(json.dumps({"width": width, "test_rmse": rmse}, indent=2))
        return [*paths, path]
