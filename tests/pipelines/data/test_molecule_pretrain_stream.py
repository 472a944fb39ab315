"""Streamed pretraining over featurized chunks (pipelines/molecules/pretrain_chunks.py,
pretrain_stream.py): a tiny corpus of 3 chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from vecset.encoders.graph import DescriptorScaler, FeatureCache, MoleculeFeaturizer
from vecset.pipelines.molecules.pretrain_chunks import chunk_corpus, featurize_chunks
from vecset.pipelines.molecules.pretrain_stream import (
    ChunkSampler,
    MoleculeStreamDataModule,
    Moments,
    load_chunk,
)

ROOT = Path(__file__).resolve().parents[3]
MOSES = ROOT / "data" / "molecules" / "moses_10k.csv"
ROWS, CHUNK = 150, 50


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """150 MOSES rows and an invalid one (row 60, line 62), featurized in 3 chunks of 50 and
    one of 1, the first chunk first (as a stopped featurization leaves it), then the rest."""
    tmp = tmp_path_factory.mktemp("stream")
    lines = MOSES.read_text().splitlines()[: ROWS + 1]
    lines.insert(61, "C1CC")  # an unclosed ring
    path = tmp / "m.csv"
    path.write_text("\n".join(lines) + "\n")
    feat, cache = MoleculeFeaturizer(descriptors=True), FeatureCache(tmp / "cache")
    chunks = chunk_corpus(path, feat, "smiles", CHUNK, cache)
    first = list(featurize_chunks(chunks, feat, cache, max_chunks=1))
    stamp = chunks.chunks[0].path.stat().st_mtime_ns
    calls: list[str] = []

    class Counting(MoleculeFeaturizer):
        def __call__(self, smiles):
            calls.append(smiles)
            return super().__call__(smiles)

    rest = list(featurize_chunks(chunks, Counting(descriptors=True), cache))
    return {"path": path, "cache": tmp / "cache", "first": first, "rest": rest, "calls": calls,
            "stamp": stamp, "chunks": chunks}


def same(a, b) -> bool:
    """Nested dicts / lists / tensors / arrays equal, element for element."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_chunks_featurized_by_two_processes_equal_those_of_one(corpus, tmp_path):
    feat, cache = MoleculeFeaturizer(descriptors=True), FeatureCache(tmp_path / "cache")
    chunks = chunk_corpus(corpus["path"], feat, "smiles", CHUNK, cache)
    rows = list(featurize_chunks(chunks, feat, cache, jobs=2))
    assert sorted(r["chunk"] for r in rows) == [0, 1, 2, 3] and chunks.missing() == []
    for one, two in zip(corpus["chunks"].chunks, chunks.chunks, strict=True):
        assert one.path.name == two.path.name  # the same key: the same SMILES and settings
        assert same(torch.load(one.path, weights_only=False), torch.load(two.path, weights_only=False))
    with pytest.raises(ValueError, match="jobs must be a whole number of processes >= 1, got 0"):
        list(featurize_chunks(chunks, feat, cache, jobs=0))


def test_a_resumed_featurization_does_not_redo_finished_chunks(corpus):
    chunks = corpus["chunks"]
    assert [len(c.smiles) for c in chunks.chunks] == [50, 50, 50, 1]
    assert [r["chunk"] for r in corpus["first"]] == [0] and [r["chunk"] for r in corpus["rest"]] == [1, 2, 3]
    assert corpus["calls"] == [s for c in chunks.chunks[1:] for s in c.smiles]  # chunk 0 not featurized again
    assert chunks.chunks[0].path.stat().st_mtime_ns == corpus["stamp"]  # nor rewritten
    assert chunks.missing() == []


def dm_of(corpus, **kw) -> MoleculeStreamDataModule:
    dm = MoleculeStreamDataModule(str(corpus["path"]), val_fraction=0.1, batch_size=16,
                                  cache_dir=str(corpus["cache"]), chunk_size=CHUNK, **kw)
    dm.setup("fit")
    return dm


def test_every_molecule_is_seen_once_an_epoch_reading_each_chunk_once(corpus):
    dm = dm_of(corpus)
    train, val = dm.train_set, dm.splits["val"]
    assert [s["line"] for s in dm.skipped] == [62]
    assert len(val) in (14, 15) and len(train) + len(val) == ROWS  # 151 rows, 15 drawn to validate, 1 invalid
    loader = dm.train_dataloader()
    ids = torch.cat([b["ids"] for b in loader]).tolist()
    assert sorted(ids + [it["id"] for it in val]) == [r for r in range(ROWS + 1) if r != 60]
    held = sum(1 for rows in train.rows if rows)  # chunks with a training molecule
    assert held >= 3 and train.loads == held  # one read per chunk
    chunk_of = [i // CHUNK for i in ids]
    assert sum(a != b for a, b in zip(chunk_of, chunk_of[1:], strict=False)) == held - 1  # chunk by chunk
    batch = next(iter(loader))
    assert batch["desc_target"].shape == (16, 217) and batch["x"].shape[0] == 16


def test_the_order_is_seeded_and_changes_every_epoch(corpus):
    dm = dm_of(corpus)
    a, b = ChunkSampler(dm.train_set, seed=3), ChunkSampler(dm.train_set, seed=3)
    assert a.order(0) == b.order(0) and a.order(0) != a.order(1)
    assert ChunkSampler(dm.train_set, seed=4).order(0) != a.order(0)
    assert sorted(a.order(1)) == list(range(len(dm.train_set)))
    a.set_epoch(1)
    a.resume_at(1, 32)  # what ResumeState does on --ckpt_path last after 2 batches of 16
    assert list(a) == a.order(1)[32:] and list(a) == a.order(1)  # the skip applies once


def test_the_scaler_is_the_whole_training_sets(corpus):
    dm = dm_of(corpus)
    rows = np.stack([dm.train_set[i]["desc_target"].numpy() for i in range(len(dm.train_set))])
    raw = []
    for k, chunk in enumerate(corpus["chunks"].chunks):
        mols = load_chunk(chunk, FeatureCache(corpus["cache"]))
        raw += [mols[chunk.smiles[r - chunk.start]].descriptors for r in dm.train_set.rows[k]]
    ref = DescriptorScaler().fit(np.stack(raw))
    assert np.allclose(dm.scaler.mean, ref.mean) and np.allclose(dm.scaler.std, ref.std)
    assert np.allclose(rows, np.stack([ref.transform(r).numpy() for r in raw]), atol=1e-5)


def test_moments_merge_chunks_with_nans_as_one_pass():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, (100, 4))
    x[rng.random((100, 4)) < 0.1] = np.nan
    x[:, 3] = np.nan
    m = Moments()
    for part in np.array_split(x, 7):
        m.add(part)
    s = m.scaler()
    assert np.allclose(s.mean[:3], np.nanmean(x[:, :3], 0)) and np.allclose(s.std[:3], np.nanstd(x[:, :3], 0))
    assert s.mean[3] == 0 and s.std[3] == 1


def test_a_chunk_not_featurized_is_an_error_naming_the_command(corpus, tmp_path):
    lines = corpus["path"].read_text().splitlines()
    path = tmp_path / "more.csv"
    path.write_text("\n".join([*lines, "CCO"]) + "\n")  # the last chunk changes: not in the cache
    with pytest.raises(ValueError, match=r"1 of 4 chunks are not featurized \(first: chunk 3.*featurize_corpus.py"):
        MoleculeStreamDataModule(str(path), cache_dir=str(corpus["cache"]), chunk_size=CHUNK).setup("fit")


def stream_config(tmp: Path, corpus: dict, name: str) -> Path:
    """configs/pretrain_molecules_stream.yaml, tiny (width 16, one block), on the 3-chunk corpus:
    2 epochs of 9 batches, a step checkpoint every 2 steps, dropout on, deterministic."""
    cfg = yaml.safe_load((ROOT / "configs" / "pretrain_molecules_stream.yaml").read_text())
    cfg["trainer"] = {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
                      "enable_model_summary": False, "log_every_n_steps": 1, "precision": "32-true",
                      "deterministic": True,
                      "callbacks": [{"class_path": "vecset.pipelines.StepCheckpoint",
                                     "init_args": {"every_n_train_steps": 2}}]}
    m = cfg["model"]["init_args"]
    m["encoder"]["init_args"]["heads"] = 2
    m["backbone"]["init_args"].update(d_model=16, heads=2, depth=1)
    cfg["data"]["init_args"].update(csv_path=str(corpus["path"]), cache_dir=str(corpus["cache"]), chunk_size=CHUNK,
                                    batch_size=16, val_fraction=0.1, featurize_missing=False)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_stopped_pretraining_resumes_as_if_never_stopped(corpus, tmp_path, monkeypatch):
    """Stopped mid-epoch (epoch 1, after its third batch's step checkpoint), resumed with
    --ckpt_path last: the same weights, bit for bit, as a run never stopped (the chunk order, the
    masks and the dropout draws all continue where they were)."""
    from vecset.pipelines.cli import run_cli

    quiet = ["--plots=false"]
    for name in ("ref", "crash"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "ref")
    run_cli(["fit", "--config", str(stream_config(tmp_path, corpus, "job")), *quiet])
    monkeypatch.chdir(tmp_path / "crash")
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(stream_config(tmp_path, corpus, "job")), *quiet,
                 "--trainer.callbacks+=resume_helpers.StopAtStep", "--trainer.callbacks.step=13"])
    ckpts = tmp_path / "crash/runs/job/version_0/checkpoints"
    step = torch.load(ckpts / "last-step.ckpt", map_location="cpu", weights_only=True)
    assert (step["global_step"], step["epoch"], step["vecset_resume"]["batches_done"]) == (12, 1, 3)
    run_cli(["fit", "--config", str(stream_config(tmp_path, corpus, "job")), *quiet, "--ckpt_path", "last"])
    ref = torch.load(tmp_path / "ref/runs/job/version_0/checkpoints/last.ckpt", map_location="cpu",
                     weights_only=True)
    res = torch.load(ckpts / "last.ckpt", map_location="cpu", weights_only=True)
    assert res["global_step"] == ref["global_step"] == 18
    for k, v in ref["state_dict"].items():
        assert torch.equal(v, res["state_dict"][k]), k
