"""Property tests (hypothesis) for collation and masks: random set sizes, single-vector sets,
empty sets rejected with a clear error, and padding that never changes a real vector."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vecset.backbone import Backbone, VectorSet
from vecset.encoders.collate import pad_sets
from vecset.pipelines.training.callbacks import NonFiniteError, NonFiniteGuard

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
lengths = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6)


def make_items(ns: list[int], width: int, seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"x": torch.randn(n, width, generator=g), "y": torch.randint(0, 3, (n,), generator=g), "id": 100 + i}
            for i, n in enumerate(ns)]


@FAST
@given(ns=lengths, width=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_pad_sets_keeps_every_vector_and_marks_padding(ns, width, seed):
    items = make_items(ns, width, seed)
    b = pad_sets(items, pad_label=-7)
    B, N = len(ns), max(ns)
    assert b["x"].shape == (B, N, width) and b["mask"].shape == (B, N) and b["mask"].dtype == torch.bool
    assert b["mask"].sum(1).tolist() == ns
    assert b["ids"].tolist() == [100 + i for i in range(B)]
    for i, (it, n) in enumerate(zip(items, ns, strict=True)):
        assert torch.equal(b["x"][i, :n], it["x"])  # real vectors unchanged, in order
        assert bool((b["x"][i, n:] == 0).all())
        assert bool(b["mask"][i, :n].all()) and not bool(b["mask"][i, n:].any())  # True = real, a prefix
        assert torch.equal(b["y"][i, :n], it["y"]) and bool((b["y"][i, n:] == -7).all())


@FAST
@given(ns=lengths, empty_at=st.integers(0, 5), seed=st.integers(0, 2**16))
def test_empty_set_is_rejected_naming_the_sample(ns, empty_at, seed):
    items = make_items(ns, 2, seed)
    k = empty_at % (len(items) + 1)
    items.insert(k, {"x": torch.zeros(0, 2), "y": torch.zeros(0, dtype=torch.long), "id": 7})
    with pytest.raises(ValueError, match=r"sample id=7 is an empty set \(shape \(0, 2\)\); every set needs at least one vector"):
        pad_sets(items)


def test_empty_batch_is_rejected():
    with pytest.raises(ValueError, match="cannot collate an empty batch"):
        pad_sets([])


@FAST
@given(ns=lengths, seed=st.integers(0, 2**16))
def test_from_list_matches_pad_sets_and_rejects_empty(ns, seed):
    items = make_items(ns, 3, seed)
    vs = VectorSet.from_list([it["x"] for it in items])
    b = pad_sets(items)
    assert torch.equal(vs.x, b["x"]) and torch.equal(vs.mask, b["mask"])
    assert vs.lengths.tolist() == ns
    with pytest.raises(ValueError, match=r"set 1 must be a non-empty \(n, D\) tensor, got shape \(0, 3\)"):
        VectorSet.from_list([items[0]["x"], torch.zeros(0, 3)])


BACKBONE = Backbone(d_model=16, depth=2, heads=2, mlp_ratio=2.0).eval()
torch.manual_seed(0)


@FAST
@given(ns=lengths, seed=st.integers(0, 2**16))
def test_backbone_padding_never_changes_a_real_vector(ns, seed):
    """Each set alone (no padding) == the same set inside a padded batch, for random sizes,
    single-vector sets included; padded positions come out zero and nothing is NaN."""
    g = torch.Generator().manual_seed(seed)
    sets = [torch.randn(n, 16, generator=g) for n in ns]
    with torch.no_grad():
        batch = BACKBONE(VectorSet.from_list(sets))
        assert torch.isfinite(batch.x).all()
        for i, s in enumerate(sets):
            alone = BACKBONE(VectorSet.from_list([s]))
            torch.testing.assert_close(batch.x[i, : len(s)], alone.x[0], atol=1e-5, rtol=1e-5)
            assert bool((batch.x[i, len(s):] == 0).all())


def test_all_single_vector_sets():
    sets = [torch.randn(1, 16) for _ in range(5)]
    with torch.no_grad():
        out = BACKBONE(VectorSet.from_list(sets))
    assert out.x.shape == (5, 1, 16) and torch.isfinite(out.x).all()


@FAST
@given(ns=lengths, row=st.integers(0, 5), col=st.integers(0, 8), seed=st.integers(0, 2**16))
def test_guard_names_exactly_the_bad_samples(ns, row, col, seed):
    b = pad_sets(make_items(ns, 2, seed))
    i, j = row % len(ns), col % ns[row % len(ns)]
    b["x"][i, j, 0] = float("nan")
    guard = NonFiniteGuard()

    class T:  # the trainer fields the message uses (training batches are checked before the transfer)
        current_epoch, global_step, world_size, training = 0, 0, 1, True

        class fit_loop:  # noqa: N801
            class epoch_loop:  # noqa: N801
                batch_idx = 2  # the next batch is batch 3

    with pytest.raises(NonFiniteError, match=rf"train batch 3 .*sample ids: \[{100 + i}\]"):
        guard.check_host_batch(T(), b)
