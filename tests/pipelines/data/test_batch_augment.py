"""Per-sample batch augmentations (``batch_augment.py``): their statistics over many samples
with a seed, that parameters differ within one batch, and what each guarantees (crop shifts
within the padding, erased area within bounds, mixed labels summing to 1, masks inside the
real frames)."""

from __future__ import annotations

import pytest
import torch

from vecset.pipelines.data.batch_augment import (
    AlternatingFlip,
    CutMix,
    HorizontalFlip,
    MixUp,
    RandomCrop,
    RandomErasing,
    SpecAugment,
    shift_images,
)
from vecset.pipelines.data.device_loader import DeviceLoader, DeviceSampler
from vecset.pipelines.data.options import BucketedPlacement

B, H, W = 4000, 12, 10


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def numbered(b: int = B) -> torch.Tensor:
    """(b, 1, H, W) images whose pixel (i, j) holds i * W + j + 1 (0 is the fill)."""
    return (torch.arange(H * W, dtype=torch.float32) + 1).reshape(1, 1, H, W).repeat(b, 1, 1, 1)


def test_shift_images_moves_each_sample_by_its_own_offset():
    x = numbered(3)
    out = shift_images(x, torch.tensor([0, 1, -2]), torch.tensor([0, -1, 3]), torch.tensor([0.0]))
    assert torch.equal(out[0], x[0])
    assert out[1, 0, 0, 0] == 0 and out[1, 0, 0, 1] == x[1, 0, 1, 0]  # out[i, j] = x[i + 1, j - 1]
    assert out[2, 0, 2, 0] == x[2, 0, 0, 3] and (out[2, 0, :2] == 0).all() and (out[2, 0, :, -3:] == 0).all()


def test_random_crop_shifts_within_padding_uniformly_per_sample():
    crop = RandomCrop(padding=2)
    crop.bind(fill=torch.tensor([0.0]))
    out = crop({"image": numbered()}, gen())["image"]
    # the shift of each sample: where pixel value v (row r, col c) landed
    rows, cols = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
    centre = out[:, 0, 5, 5]  # holds x[5 + dy, 5 + dx], inside the image for |shift| <= 2
    dy = ((centre - 1) // W).long() - 5
    dx = ((centre - 1) % W).long() - 5
    assert dy.abs().max() <= 2 and dx.abs().max() <= 2
    counts = torch.bincount((dy + 2) * 5 + (dx + 2), minlength=25)
    assert counts.min() > B / 25 * 0.7 and counts.max() < B / 25 * 1.3  # all 25 shifts, about equally
    expected = shift_images(numbered(), dy, dx, torch.tensor([0.0]))
    assert torch.equal(out, expected) and (rows >= 0).all() and (cols >= 0).all()


def test_crop_and_flip_equal_torchvisions_per_image_ones_at_every_draw():
    """configs/fashion_mnist.yaml uses these in place of torchvision's per-image RandomCrop(28,
    padding=2) and RandomHorizontalFlip: each of the 25 shifts (and its flip) gives the image that
    torchvision's pad-then-crop at that position gives, scaled and normalized after."""
    from torchvision.transforms.v2 import functional as TF

    from vecset.pipelines.data.device_loader import ScaleNormalize
    from vecset.pipelines.images.fashion_mnist import MEAN, STD

    img = torch.randint(0, 256, (1, 1, 28, 28), dtype=torch.uint8, generator=gen())
    norm = ScaleNormalize(255.0, [MEAN], [STD])
    fill = norm(torch.zeros(1, 1, 1, 1, dtype=torch.uint8)).reshape(1)
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            ref = TF.crop(TF.pad(img[0], [2], fill=0), 2 + dy, 2 + dx, 28, 28)  # v2.RandomCrop's draw (top, left)
            out = shift_images(norm(img), torch.tensor([dy]), torch.tensor([dx]), fill)
            assert torch.equal(out[0], norm(ref[None])[0])
            assert torch.equal(out.flip(-1)[0], norm(TF.horizontal_flip(ref)[None])[0])


def test_flip_rate_is_p_per_sample():
    out = HorizontalFlip(p=0.3)({"image": numbered()}, gen())["image"]
    flipped = (out[:, 0, 0, 0] == W)  # the first row's last value moved to its start
    assert torch.equal(out[flipped], numbered().flip(-1)[flipped]) and torch.equal(out[~flipped], numbered()[~flipped])
    assert abs(flipped.float().mean().item() - 0.3) < 0.03
    assert 0 < flipped[:16].sum() < 16  # per sample: one batch holds both


def test_erasing_rate_and_area_within_bounds():
    er = RandomErasing(p=0.5, scale=(0.05, 0.3), ratio=(0.5, 2.0), value=0.0)
    out = er({"image": numbered()}, gen())["image"]
    erased = (out[:, 0] == 0).flatten(1).sum(1).float() / (H * W)  # (B,) the erased share
    hit = erased > 0
    assert abs(hit.float().mean().item() - 0.5) < 0.03
    # rounding h and w to pixels moves the area a little around the drawn share
    assert erased[hit].min() >= 0.05 * 0.5 and erased[hit].max() <= 0.3 * 1.4
    assert erased[hit].std() > 0.03  # areas differ per sample
    # the erased pixels form one rectangle per image
    for img in out[hit][:50, 0]:
        r, c = (img == 0).nonzero(as_tuple=True)
        assert (img[r.min():r.max() + 1, c.min():c.max() + 1] == 0).all()


def test_mixup_labels_sum_to_one_and_images_mix_by_the_same_lambda():
    x, y = torch.randn(B, 1, 4, 4), torch.randint(0, 10, (B,))
    m = MixUp(alpha=0.4)
    m.bind(num_classes=10)
    out = m({"image": x, "y": y}, gen())
    soft = out["y"]
    assert soft.shape == (B, 10) and torch.allclose(soft.sum(1), torch.ones(B))
    lam = soft[torch.arange(B), y]  # this sample's own share (where y != the next one's label)
    differ = y != y.roll(1)
    expected = lam[:, None, None, None] * x + (1 - lam[:, None, None, None]) * x.roll(1, 0)
    torch.testing.assert_close(out["image"][differ], expected[differ])
    # Beta(0.4, 0.4): mean 1/2, most of the mass near 0 and 1; one lambda per sample
    assert abs(lam[differ].mean().item() - 0.5) < 0.03 and lam[differ].std() > 0.3


def test_cutmix_labels_follow_the_pasted_area():
    x, y = numbered(), torch.randint(0, 10, (B,))
    cm = CutMix(alpha=1.0)
    cm.bind(num_classes=10)
    out = cm({"image": x + 1000 * torch.arange(B).view(B, 1, 1, 1).float(), "y": y}, gen())
    own = (out["image"] >= 1000 * torch.arange(B).view(B, 1, 1, 1)) & (
        out["image"] < 1000 * (torch.arange(B) + 1).view(B, 1, 1, 1))
    kept = own.flatten(1).float().mean(1)  # (B,) the share of the sample's own pixels
    differ = y != y.roll(1)
    soft = out["y"]
    assert torch.allclose(soft.sum(1), torch.ones(B))
    torch.testing.assert_close(soft[torch.arange(B), y][differ], kept[differ])
    assert kept.std() > 0.1  # boxes differ per sample


@pytest.mark.parametrize("cls", [MixUp, CutMix])
def test_mix_needs_the_class_count(cls):
    with pytest.raises(ValueError, match=f"^{cls.__name__} needs the class count"):
        cls()({"image": torch.zeros(2, 1, 4, 4), "y": torch.tensor([0, 1])}, gen())


def test_spec_augment_masks_stay_in_real_frames_within_widths():
    T, F = 50, 16
    lengths = torch.randint(10, T + 1, (500,))  # longer than a time mask
    mask = torch.arange(T)[None] < lengths[:, None]
    x = torch.ones(500, T, F)
    sa = SpecAugment(time_masks=1, time_width=6, freq_masks=1, freq_width=4)
    out = sa({"x": x, "mask": mask, "y": torch.zeros(500, T)}, gen())["x"]
    zero = out == 0
    assert not zero[~mask].any()  # padding untouched
    frames = zero.all(2)  # (B, T) a whole frame masked: time mask
    bands = (zero | ~mask[:, :, None]).all(1)  # (B, F) a whole band masked: frequency mask
    assert frames.sum(1).max() <= 6 and bands.sum(1).max() <= 4
    assert frames.any(1).float().mean() > 0.7 and bands.any(1).float().mean() > 0.7
    assert frames.sum(1).float().std() > 0.5  # widths drawn per utterance


def test_same_seed_same_augmentation():
    augs = [RandomCrop(2), HorizontalFlip(), RandomErasing()]
    for a in augs:
        a.bind(fill=torch.tensor([0.0]))
    run = lambda seed: [a({"image": numbered(64)}, gen(seed))["image"] for a in augs]  # noqa: E731
    assert all(torch.equal(p, q) for p, q in zip(run(1), run(1), strict=True))
    assert not all(torch.equal(p, q) for p, q in zip(run(1), run(2), strict=True))


def test_sequence_head_takes_mixed_labels_for_its_loss_and_metrics():
    """The soft labels of MixUp/CutMix are class probabilities: the cross-entropy takes them as
    they are (equal to the one-hot loss for unmixed samples), the accuracy their argmax."""
    from vecset.heads import SequenceHead

    head = SequenceHead(d_model=8, num_outputs=10)
    out, y = torch.randn(6, 10), torch.tensor([1, 2, 3, 4, 5, 6])
    m = MixUp(alpha=1.0, p=0.0)  # p 0: nothing mixed, the labels only made soft
    m.bind(num_classes=10)
    soft = m({"image": torch.zeros(6, 1, 2, 2), "y": y}, gen())["y"]
    torch.testing.assert_close(head.loss(out, {"y": soft}), head.loss(out, {"y": y}))
    preds, target = head.metric_inputs(out, {"y": soft})
    assert torch.equal(target, y) and torch.equal(preds, out.argmax(-1))


def test_a_data_module_refuses_another_kind_of_transform():
    """Each data module declares the kind of batch transform it takes; the images take no
    SpecAugment, the speech frames no MixUp (issue 57: a KeyError in the first step)."""
    from vecset.pipelines.data.batch_augment import FrameAugment, ImageAugment
    from vecset.pipelines.images.digits import DigitsDataModule
    from vecset.pipelines.speech.data import SpeechFramesDataModule

    assert SpeechFramesDataModule.batch_augment_kind is FrameAugment and DigitsDataModule.batch_augment_kind is ImageAugment
    with pytest.raises(ValueError, match=r"^batch_augment: DigitsDataModule takes ImageAugments, transforms of image "
                                         r"batches .* \(RandomCrop, HorizontalFlip, AlternatingFlip, RandomErasing, MixUp, CutMix\); "
                                         r"SpecAugment transforms frame batches"):
        DigitsDataModule(batch_augment=[RandomCrop(), SpecAugment()])
    assert len(DigitsDataModule(batch_augment=[RandomCrop(), MixUp()]).batch_augment) == 2
    with pytest.raises(ValueError, match=r"^batch_augment: SpeechFramesDataModule takes FrameAugments.*; MixUp transforms image"):
        SpeechFramesDataModule(batch_augment=[MixUp()], placement=BucketedPlacement(on_device=True))


def flipped_per_epoch(n: int, epochs: int, seed: int | None = 0) -> torch.Tensor:
    """(epochs, n) bool: whether ``AlternatingFlip`` in a shuffled ``DeviceLoader`` mirrored each
    image (by its id) in each epoch, read from the pixels."""
    x = numbered(n)
    loader = DeviceLoader({"image": x, "ids": torch.arange(n)}, 64, sampler=DeviceSampler(n, "cpu", seed=3),
                          transforms=[AlternatingFlip(seed)])
    out = torch.zeros(epochs, n, dtype=torch.bool)
    for e in range(epochs):
        loader.sampler.set_epoch(e)
        for batch in loader:
            same, mirrored = [(batch["image"] == ref).flatten(1).all(1) for ref in (x[:1], x[:1].flip(-1))]
            assert (same ^ mirrored).all()  # each image as it is or mirrored, nothing else
            out[e, batch["ids"]] = mirrored
    return out


def test_alternating_flip_mirrors_half_then_the_other_half_each_epoch():
    flips = flipped_per_epoch(1000, 4)
    assert 0.47 < flips[0].float().mean() < 0.53  # a half, as HorizontalFlip(0.5)
    assert torch.equal(flips[1], ~flips[0]) and torch.equal(flips[2], flips[0]) and torch.equal(flips[3], ~flips[0])
    other = flipped_per_epoch(1000, 1, seed=1)[0]
    assert 0.3 < (other != flips[0]).float().mean() < 0.7  # another seed, another half


def test_alternating_flip_needs_the_ids():
    with pytest.raises(ValueError, match="AlternatingFlip needs the batch's 'ids'.*\\['image'\\]"):
        AlternatingFlip(0)({"image": numbered(2)}, gen())
