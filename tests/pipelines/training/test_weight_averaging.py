"""Weight averaging (pipelines/training/averaging.py): what Lightning's callback saves, that the
averaged weights are the ones validated, checkpointed and tested, and the library behaviour the
vecset subclass corrects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
import yaml
from pytorch_lightning.callbacks import EMAWeightAveraging as LightningEMA

from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.training.averaging import EMAWeightAveraging, Lookahead

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--trainer.enable_progress_bar=false", "--trainer.max_epochs=2", "--plots=false",
         "--data.init_args.n_train=256", "--data.init_args.n_val=64", "--data.init_args.n_test=64"]


def evaluate(state_dict: dict, config: dict, stage: str) -> dict:
    """``stage`` ("validate"/"test") of the config's model holding ``state_dict``, on a plain trainer."""
    cli = run_cli(["--config", str(ROOT / "configs" / "debug.yaml"), *SMALL[:1], "--trainer.logger=false",
                   *SMALL[3:]], run=False)
    cli.model.load_state_dict(state_dict)
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    return getattr(trainer, stage)(cli.model, datamodule=cli.datamodule, verbose=False)[0]


def test_averaged_weights_are_validated_checkpointed_and_tested(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    config["trainer"]["callbacks"].append({"class_path": "vecset.pipelines.training.averaging.EMAWeightAveraging",
                                           "init_args": {"decay": 0.9}})
    (tmp_path / "ema.yaml").write_text(yaml.safe_dump(config))
    run_cli(["fit", "--config", "ema.yaml", *SMALL])
    results = json.loads(next(Path("runs/ema").glob("version_*/results.json")).read_text())
    ckpt = torch.load(results["checkpoint"], weights_only=True)
    # what Lightning's callback saves: the average as state_dict, the training weights beside it
    assert "current_model_state" in ckpt and "averaging_state" in ckpt
    key = "backbone.blocks.0.attn.in_proj.weight"
    assert not torch.equal(ckpt["state_dict"][key], ckpt["current_model_state"][key])
    averaged = evaluate(ckpt["state_dict"], config, "validate")
    assert averaged["val_acc"] == pytest.approx(results["best_val"], abs=1e-6)  # chosen by the average's score
    tested = evaluate(ckpt["state_dict"], config, "test")
    assert results["test"]["test_loss"] == pytest.approx(tested["test_loss"], rel=1e-5)
    training = evaluate(ckpt["current_model_state"], config, "test")
    assert training["test_loss"] != pytest.approx(tested["test_loss"], rel=1e-5)


@pytest.mark.parametrize("callback, holds", [(LightningEMA, "current_model_state"), (EMAWeightAveraging, "state_dict")])
def test_test_after_fit_in_the_same_trainer(callback, holds, tmp_path):
    """Lightning 2.6's callback puts the training weights back when the fitted trainer loads a
    checkpoint to test it; vecset's keeps the averaged ones."""
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    pl.seed_everything(0)
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, 1, 2, 2.0), LabelingHead(16, 2), lr=3e-3)
    dm = SyntheticSetDataModule(n_train=128, n_val=32, n_test=32, batch_size=32)
    trainer = pl.Trainer(accelerator="cpu", max_epochs=2, callbacks=[callback(decay=0.9)], default_root_dir=tmp_path,
                         logger=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, datamodule=dm)
    best = trainer.checkpoint_callback.best_model_path
    trainer.test(model, datamodule=dm, ckpt_path=best, verbose=False)
    ckpt = torch.load(best, weights_only=True)
    key = "backbone.blocks.0.attn.in_proj.weight"
    assert torch.equal(model.state_dict()[key], ckpt[holds][key])


@pytest.mark.parametrize("lightning_class, ours", [("EMAWeightAveraging", "EMAWeightAveraging"),
                                                    ("WeightAveraging", "WeightAveraging")])
def test_lightnings_own_averaging_is_warned_about(tmp_path, monkeypatch, lightning_class, ours):
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    config["trainer"]["callbacks"].append({"class_path": f"pytorch_lightning.callbacks.{lightning_class}"})
    (tmp_path / "ema.yaml").write_text(yaml.safe_dump(config))
    with pytest.warns(UserWarning, match=r"^trainer\.callbacks: pytorch_lightning\.") as caught:
        run_cli(["--config", "ema.yaml", *SMALL], run=False)
    first = str(next(w.message for w in caught if "trainer.callbacks" in str(w.message))).splitlines()[0]
    assert first.startswith(f"trainer.callbacks: pytorch_lightning.callbacks.weight_averaging.{lightning_class} tests "
                            "the training weights after fit")
    assert first.endswith(f"use vecset.pipelines.training.averaging.{ours} (the same arguments)")


def test_vecsets_averaging_is_not_warned_about(tmp_path, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    config["trainer"]["callbacks"].append({"class_path": "vecset.pipelines.training.averaging.EMAWeightAveraging"})
    (tmp_path / "ema.yaml").write_text(yaml.safe_dump(config))
    run_cli(["--config", "ema.yaml", *SMALL], run=False)
    assert not [w for w in recwarn if "trainer.callbacks:" in str(w.message)]


class Line(pl.LightningModule):
    """y = w x + b by SGD with momentum on one fixed batch: a step anyone can redo by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.lin(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


def line_data() -> torch.utils.data.DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)


def line_fit(steps: int, tmp_path: Path, callback: Lookahead, ckpt_path: str | None = None, save: str | None = None):
    trainer = pl.Trainer(accelerator="cpu", max_steps=steps, callbacks=[callback], logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tmp_path)
    torch.manual_seed(0)
    model = Line()
    trainer.fit(model, train_dataloaders=line_data(), ckpt_path=ckpt_path)
    if save:
        trainer.save_checkpoint(save)
    return model


def test_lookahead_equals_the_papers_update_and_resumes(tmp_path):
    # by hand: SGD's steps on the fast weights; every k = 3 steps slow += 0.5 (fast - slow), fast = slow
    torch.manual_seed(0)
    ref = Line()
    opt = ref.configure_optimizers()
    slow = [p.detach().clone() for p in ref.parameters()]
    x, y = next(iter(line_data()))
    for t in range(1, 11):
        opt.zero_grad()
        ref.training_step((x, y), 0).backward()
        opt.step()
        if t % 3 == 0:
            with torch.no_grad():
                for s, p in zip(slow, ref.parameters(), strict=True):
                    s.add_(p - s, alpha=0.5)
                    p.copy_(s)
    model = line_fit(10, tmp_path, Lookahead(k=3, alpha=0.5))
    for p, r in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, r)
    # stopped after 7 steps (one step past a sync) and resumed: the slow weights come back
    line_fit(7, tmp_path, Lookahead(k=3, alpha=0.5), save=str(tmp_path / "seven.ckpt"))
    resumed = line_fit(10, tmp_path, Lookahead(k=3, alpha=0.5), ckpt_path=str(tmp_path / "seven.ckpt"))
    for p, r in zip(resumed.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, r)
    plain = line_fit(10, tmp_path, pl.Callback())  # and without it, other weights
    assert not torch.allclose(plain.lin.weight, ref.lin.weight)


@pytest.mark.parametrize("k, alpha, message", [(0, 0.5, "k must be at least 1"), (5, 0.0, r"alpha must be in \(0, 1\]")])
def test_lookahead_refuses_bad_settings(k, alpha, message):
    with pytest.raises(ValueError, match=message):
        Lookahead(k=k, alpha=alpha)
