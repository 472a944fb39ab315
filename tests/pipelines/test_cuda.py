"""On a CUDA GPU (skipped where there is none): every attention path gives the CPU's float64
answer, bf16 autocast stays close to float32, and the CLI trains the debug, speech and
multitask jobs with ``--trainer.accelerator gpu --trainer.precision bf16-mixed``."""

import json
from pathlib import Path

import pytest
import torch

from vecset.backbone import Backbone, MultiHeadSelfAttention, VectorSet
from vecset.pipelines.data.options import BucketedPlacement, DevicePlacement
from vecset.pipelines.molecules.options import MoleculeFeatures

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = Path(__file__).resolve().parents[2]
GPU = ["--trainer.accelerator", "gpu", "--trainer.devices", "1", "--trainer.precision", "bf16-mixed",
       "--trainer.enable_progress_bar=false"]


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / b.norm())


# each case reaches a different kernel: no mask (SDPA picks flash/efficient), a padding mask,
# the blocked local path (N > 4 x window), the dense band, a relative-position bias, a float
# key bias (gaussian score), and the plain reference formulation
CASES = {
    "unmasked": dict(n=96, pad=False),
    "padded": dict(n=96, pad=True),
    "blocked_local": dict(n=200, pad=True, window=8, local_impl="blocked"),
    "dense_band": dict(n=40, pad=True, window=8, local_impl="dense"),
    "relative_positions": dict(n=200, pad=True, window=8, relative_positions=8, local_impl="blocked"),
    # the blocked path for the scores and normalizations SDPA does not take
    "blocked_sigmoid": dict(n=200, pad=True, window=8, normalize="sigmoid", local_impl="blocked"),
    "blocked_additive_relu": dict(n=200, pad=True, window=8, score="additive", normalize="relu",
                                  relative_positions=8, local_impl="blocked"),
    "gaussian": dict(n=96, pad=True, score="gaussian"),
    "reference": dict(n=96, pad=True, path="reference"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_attention_on_cuda_matches_cpu_float64(case):
    c = dict(CASES[case])
    n, pad = c.pop("n"), c.pop("pad")
    local_impl, path = c.pop("local_impl", "auto"), c.pop("path", "auto")
    torch.manual_seed(0)
    ref = MultiHeadSelfAttention(64, heads=4, **c).double()
    if ref.relative_positions:
        torch.nn.init.normal_(ref.rel_bias)  # it starts at zero: make it matter
    gpu = MultiHeadSelfAttention(64, heads=4, **c).cuda()
    gpu.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    for m in (ref, gpu):
        m.local_impl, m.path = local_impl, path
    x = torch.randn(3, n, 64, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, n, dtype=torch.bool)
    if pad:
        mask[1, n // 2:] = False
        mask[2, n - 7:] = False
    xg = x.detach().float().cuda().requires_grad_()
    out_ref, out_gpu = ref(x, mask), gpu(xg, mask.cuda())
    keep = mask[..., None]
    assert rel_err(out_gpu * keep.cuda(), out_ref * keep) < 1e-4
    (out_ref * keep).pow(2).sum().backward()
    (out_gpu * keep.cuda()).pow(2).sum().backward()
    assert rel_err(xg.grad, x.grad) < 1e-4
    assert rel_err(gpu.in_proj.weight.grad, ref.in_proj.weight.grad) < 1e-4


def test_bf16_autocast_backbone_close_to_float32():
    torch.manual_seed(0)
    bb = Backbone(d_model=128, depth=4, heads=4, window=16).cuda().eval()
    x = torch.randn(4, 500, 128, device="cuda")
    vs = VectorSet(x=x, mask=torch.ones(4, 500, dtype=torch.bool, device="cuda"))
    with torch.no_grad():
        full = bb(vs).x
        with torch.autocast("cuda", dtype=torch.bfloat16):
            half = bb(vs).x
    # the final LayerNorm runs in float32 under autocast; the blocks' matmuls in bf16
    assert 0 < rel_err(half, full) < 3e-2


def test_long_truncated_attention_fits_in_little_gpu_memory():
    # 10 minutes of speech frames (60,000) with window 64: memory grows with N x window
    torch.manual_seed(0)
    bb = Backbone(d_model=128, depth=4, heads=4, window=64).cuda().eval()
    x = torch.randn(1, 60_000, 128, device="cuda")
    vs = VectorSet(x=x, mask=torch.ones(1, 60_000, dtype=torch.bool, device="cuda"))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        out = bb(vs).x
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    assert out.shape == (1, 60_000, 128) and bool(torch.isfinite(out).all())
    assert extra < 1 * 2**30, f"{extra / 2**20:.0f} MiB"  # full attention would need 4 x 14 GiB


def _fit(tmp_path, monkeypatch, config: str, *extra: str) -> tuple[Path, dict]:
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(ROOT / "configs" / f"{config}.yaml"), *GPU, *extra])
    run_dir = tmp_path / "runs" / config / "version_0"
    return run_dir, json.loads((run_dir / "results.json").read_text())


def test_cli_fit_on_gpu_reaches_the_cpu_bar_and_reloads_on_cpu(tmp_path, monkeypatch):
    from vecset.pipelines.training.task import TaskModule

    run_dir, results = _fit(tmp_path, monkeypatch, "debug")
    assert results["test"]["test_acc"] >= 0.95  # the bar test_cli sets on the CPU
    on_cpu = TaskModule.load_from_checkpoint(results["checkpoint"], map_location="cpu").eval()
    on_gpu = TaskModule.load_from_checkpoint(results["checkpoint"], map_location="cuda").eval()
    assert next(on_gpu.parameters()).is_cuda
    batch = {"x": torch.randn(2, 5, 2), "mask": torch.ones(2, 5, dtype=torch.bool), "ids": torch.arange(2)}
    with torch.no_grad():
        a = on_cpu(batch)
        b = on_gpu({k: v.cuda() for k, v in batch.items()})
    assert rel_err(b, a) < 1e-4


def test_speech_cli_fit_on_gpu(tmp_path, monkeypatch):
    run_dir, results = _fit(tmp_path, monkeypatch, "speech_frames_debug", "--data.root", str(ROOT / "data" / "speech"))
    report = json.loads((run_dir / "test_per_phone.json").read_text())
    assert abs(report["frame_accuracy"] - results["test"]["test_acc"]) < 1e-3
    assert sum(r["frames"] for r in report["per_phone"]) == report["frames"] > 0
    for name in ("speech_segments.png", "attention.png"):
        assert (run_dir / name).stat().st_size > 0


def test_multitask_cli_fit_on_gpu(tmp_path, monkeypatch):
    run_dir, results = _fit(tmp_path, monkeypatch, "debug_multitask")
    metrics = results["test"]
    assert metrics and all(torch.isfinite(torch.tensor(float(v))) for v in metrics.values())


def test_data_on_the_gpu_draws_and_augments_batches_without_a_host_sync(tmp_path):
    """The Fashion-MNIST splits on the GPU (on_device), every batch drawn and augmented there
    (crop, flip, erasing, MixUp): iterating two epochs makes no host-device sync
    (``set_sync_debug_mode("error")`` raises on one), and the batches are the CPU's draws'
    shapes, each training image once an epoch."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "pipelines" / "data"))
    from test_fashion_mnist import write_dataset

    from vecset.pipelines import FashionMNISTDataModule
    from vecset.pipelines.data.batch_augment import HorizontalFlip, MixUp, RandomCrop, RandomErasing

    dm = FashionMNISTDataModule(root=str(write_dataset(tmp_path, n_train=300, n_test=50)), augment=False, batch_size=64, batch_augment=[RandomCrop(2), HorizontalFlip(), RandomErasing(), MixUp(0.4)], placement=DevicePlacement(on_device=True))
    dm.training_device = lambda: torch.device("cuda", 0)
    dm.setup("fit")
    loader, val = dm.train_dataloader(), dm.val_dataloader()
    ids = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            for batch in loader:
                assert batch["image"].is_cuda and batch["image"].shape[1:] == (1, 28, 28)
                assert batch["y"].shape[1:] == (10,)
                ids.append(batch["ids"])
            for batch in val:
                assert batch["image"].is_cuda
    finally:
        torch.cuda.set_sync_debug_mode("default")
    epoch0 = torch.cat(ids[:len(loader)]).cpu()
    assert sorted(epoch0.tolist()) == sorted(dm.sets["train"].ids.tolist())


def test_molecules_on_the_gpu_gather_the_cpu_batches_without_a_host_sync(tmp_path):
    """FreeSolv's first 60 molecules packed on the GPU (on_device), batches gathered there for
    two epochs with pow2 length buckets and bucket_batches: no host-device sync, and every
    batch equals the classic collate's (padded to its bucket) for the same molecules."""
    from vecset.pipelines import MoleculeDataModule

    lines = (ROOT / "data/molecules/freesolv.csv").read_text().splitlines()
    (tmp_path / "mols.csv").write_text("\n".join(lines[:61]) + "\n")
    dm = MoleculeDataModule(str(tmp_path / "mols.csv"), target_columns=["expt"], batch_size=8, cache=False, features=MoleculeFeatures(descriptors=True), placement=BucketedPlacement(on_device=True, length_buckets="pow2", bucket_batches=True))
    dm.setup("fit")
    gpu = torch.device("cuda", 0)
    loader = dm.placement.loader(dm, "train", True, gpu)
    batches = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            batches += list(loader)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    by_id = {it["id"]: it for it in dm.splits["train"]}
    collate = dm._loader(dm.splits["train"]).collate_fn  # pad_graphs, then to the batch's bucket
    assert len(batches) == 2 * len(loader)
    for b in batches:
        assert b["x"].is_cuda and b["dist"].dtype == torch.long
        ref = collate([by_id[i] for i in b["ids"].tolist()])
        for k, v in ref.items():
            assert (torch.equal(b[k].cpu(), v) if isinstance(v, torch.Tensor) else b[k] == v), k


def test_adamw_is_fused_on_cuda():
    """On a GPU the optimizer is the fused AdamW (one launch per update): the same step as the
    CPU's AdamW, within float rounding."""
    from types import SimpleNamespace

    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule
    from vecset.pipelines.training.task import adamw_warmup_cosine

    torch.manual_seed(0)
    cpu = TaskModule(VectorEncoder(2, 16), Backbone(d_model=16, depth=1, heads=2), LabelingHead(16, 2))
    gpu = TaskModule(VectorEncoder(2, 16), Backbone(d_model=16, depth=1, heads=2), LabelingHead(16, 2))
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    opts = []
    for m in (cpu, gpu):
        m._trainer = SimpleNamespace(estimated_stepping_batches=10, callbacks=[])
        opts.append(adamw_warmup_cosine(m, 1e-2, 0.01, 0.0)["optimizer"])
        for p in m.parameters():
            p.grad = torch.ones_like(p)
    assert not opts[0].defaults["fused"] and opts[1].defaults["fused"] is True
    for o in opts:
        o.step()
    for (k, a), b in zip(cpu.state_dict().items(), gpu.state_dict().values(), strict=True):
        assert torch.allclose(a, b.cpu(), atol=1e-6), k
