"""Speech frame labeling reports: per-phone test accuracy and the most frequent confusions
(``test_per_phone.json`` / ``.csv``), with the segment scores (segment PER and phone-boundary
precision / recall / F1 of argmax merging and of the head's segment decoder: segment_scores.py)
and the frame accuracy inside unseen vs seen words (word_scores.py) in the same JSON; log-mel
spectrograms with true, predicted and decoded phone segments beneath them
(``speech_segments.png``), and one query frame's attention over the frames, drawn over the
spectrogram, per head or averaged (``attention.png``)."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import numpy as np
import torch
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from vecset.contracts.abilities import AttentionWeights, Decoder
from vecset.pipelines.reports.attention_heads import (
    Heads,
    attention_colorbar,
    block_name,
    check_heads,
    heads_name,
    pick_heads,
    shared_max,
)
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_model
from vecset.pipelines.speech.segment_scores import SegmentScores
from vecset.pipelines.speech.word_scores import WordScores

log = logging.getLogger(__name__)

# (sample id, predicted labels (T,), true labels (T,)) of one test utterance
Utterance = tuple[int, np.ndarray, np.ndarray]

CMAP = "inferno"


def utterances(ctx: ReportContext) -> list[Utterance]:
    """Every test utterance's frame labels, from the test outputs (the labels the test
    accuracy scored), cut to the utterance's frames."""
    out = []
    for o in ctx.test_outputs():
        y = o.batch["y"]  # (B, T) padded
        pred = torch.as_tensor(o.pred).reshape(y.shape)  # (B, T)
        for i, sid in enumerate(o.batch["ids"].tolist()):
            n = int(o.batch["mask"][i].sum())
            out.append((sid, pred[i, :n].numpy(), y[i, :n].numpy()))
    return out


def decoded_labels(ctx: ReportContext) -> dict[int, np.ndarray]:
    """Sample id -> (T,) labels from the head's segment decoder over the utterance's logits;
    empty when the head has no decoder."""
    head = ctx.model.head
    decoder = head.segment_decoder() if isinstance(head, Decoder) else None
    if decoder is None:
        return {}
    out = {}
    for o in ctx.test_outputs():
        for i, sid in enumerate(o.batch["ids"].tolist()):
            n = int(o.batch["mask"][i].sum())
            out[sid] = decoder(o.output[i, :n])
    return out


def segment_and_word_scores(ctx: ReportContext, outputs: list[Utterance]) -> dict:
    """The segment scores of argmax merging and of the head's decoder (``segments``) and the
    frame accuracy inside unseen / seen / no words (``words``) of the test utterances."""
    dm = ctx.data
    names = list(dm.class_names)
    items = {u.id: u for u in dm.test_items()}  # Utterance (encoders/speech/reader.py)
    decoded = decoded_labels(ctx)
    seg = SegmentScores(names)
    vocab = dm.split_vocabulary("train")
    words = WordScores(vocab[0]) if vocab else None
    no_wrd = 0
    for sid, pred, y in outputs:
        u = items[sid]
        preds = {"argmax": pred} | ({"decoder": decoded[sid]} if sid in decoded else {})
        seg.update(u.segments, u.sample_rate, preds, y)
        if words is not None and u.words is not None:
            words.update(u.words, u.sample_rate, pred, y)
        else:
            no_wrd += 1
    out = {"segments": seg.compute(), "segment_decoder": repr(ctx.model.head.segment_decoder()) if decoded else None}
    if words is None:
        out["words"] = None
        log.info("speech: no .wrd files beside the training utterances: no seen / unseen word scores")
    else:
        zero = dm.zero_length_words.get("test", [])
        out["words"] = words.compute() | {"train_vocabulary": len(vocab[0]),
                                          "train_utterances_without_wrd": vocab[1],
                                          "test_utterances_without_wrd": no_wrd,
                                          # .wrd lines whose end is their start: no frames, left out
                                          "train_zero_length_words": len(vocab[2]),
                                          "test_zero_length_words": len(zero),
                                          "test_zero_length_word_lines": zero}
    out["test_utterances_sharing_a_training_sentence"] = (dm.shared_sentences or {}).get("test")
    return out


def boundary_frames(y: np.ndarray) -> np.ndarray:
    """(T,) bool: the frames on either side of a change of label (the last frame of a segment
    and the first of the next), where frame-level labels are least certain. Ignored frames
    (label < 0) make no boundary."""
    change = (y[1:] != y[:-1]) & (y[1:] >= 0) & (y[:-1] >= 0)
    out = np.zeros(len(y), dtype=bool)
    out[:-1] |= change
    out[1:] |= change
    return out


def per_phone_report(outputs: list[Utterance], class_names: list[str], out_dir: Path,
                     extra: dict | None = None) -> Path:
    """Per-phone frame accuracy on the test split (recall per true phone) and the most
    frequent confusions: ``test_per_phone.csv`` and ``test_per_phone.json`` (with ``extra``'s
    entries, ``segment_and_word_scores``)."""
    C = len(class_names)
    conf = np.zeros((C, C), dtype=np.int64)
    at_edge = np.zeros(2, dtype=np.int64)  # [frames, correct] next to a phone change
    for _, p, y in outputs:
        keep = y >= 0
        np.add.at(conf, (y[keep], p[keep]), 1)
        edge = boundary_frames(y) & keep
        at_edge += [edge.sum(), (p[edge] == y[edge]).sum()]
    rows = []
    for c in range(C):
        n = int(conf[c].sum())
        if n:
            rows.append({"phone": class_names[c], "frames": n, "accuracy": round(conf[c, c] / n, 4)})
    off = conf.copy()
    np.fill_diagonal(off, 0)
    top = np.dstack(np.unravel_index(np.argsort(off.ravel())[::-1][:10], off.shape))[0]
    confusions = [{"true": class_names[i], "predicted": class_names[j], "frames": int(off[i, j])}
                  for i, j in top if off[i, j]]
    total = int(conf.sum())
    with open(out_dir / "test_per_phone.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["phone", "frames", "accuracy"])
        w.writeheader()
        w.writerows(rows)
    # TIMIT-style scoring counts the silences (h#, pau, brth; sil/h#/pau/epi/closures are already
    # one class under timit39) as one: confusing them is no phone error
    sil = [i for i, p in enumerate(class_names) if p in ("h#", "pau", "brth")]
    folded = np.trace(conf) + (conf[np.ix_(sil, sil)].sum() - np.trace(conf[np.ix_(sil, sil)]) if sil else 0)
    inside = total - int(at_edge[0]), int(np.trace(conf) - at_edge[1])  # frames, correct
    report = {"frame_accuracy": round(float(np.trace(conf)) / max(1, total), 4),
              "frame_accuracy_silences_merged": round(float(folded) / max(1, total), 4), "frames": total,
              # where the errors are: on the two frames either side of a phone change, or inside
              "boundary_frames": int(at_edge[0]),
              "frame_accuracy_at_boundaries": round(float(at_edge[1]) / max(1, int(at_edge[0])), 4),
              "frame_accuracy_inside_phones": round(inside[1] / max(1, inside[0]), 4),
              "share_of_errors_at_boundaries": round(float(at_edge[0] - at_edge[1]) / max(1, total - int(np.trace(conf))), 4),
              **(extra or {}), "per_phone": rows, "top_confusions": confusions}
    path = out_dir / "test_per_phone.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"test frame accuracy {report['frame_accuracy']:.4f}, with h#/pau/brth merged "
          f"{report['frame_accuracy_silences_merged']:.4f}; on the frames either side of a phone change "
          f"{report['frame_accuracy_at_boundaries']:.4f} (they hold {report['share_of_errors_at_boundaries']:.0%} "
          f"of the errors), inside phones {report['frame_accuracy_inside_phones']:.4f}")
    if extra and extra.get("segments"):
        sg = extra["segments"]
        print(f"test segments ({sg['reference_phones']} reference phones, 39 classes, silences dropped): " + "; ".join(
            f"{k} {sg[k]['phones']} phones, PER {sg[k]['per']:.4f}, boundary P/R/F1 within "
            f"{sg['boundary_tolerance_ms']} ms {sg[k]['boundary_precision']:.3f}/{sg[k]['boundary_recall']:.3f}/"
            f"{sg[k]['boundary_f1']:.3f}" for k in ("argmax", "decoder") if k in sg))
    if extra and extra.get("words"):
        wd = extra["words"]
        acc = lambda k: "-" if wd[k] is None else f"{wd[k]:.4f}"  # noqa: E731  (None: no such frames)
        print(f"test words: {wd['unseen_word_tokens']} of {wd['test_word_tokens']} tokens unseen in training; "
              f"frame accuracy inside unseen words {acc('frame_accuracy_unseen_words')}, seen words "
              f"{acc('frame_accuracy_seen_words')}, outside words {acc('frame_accuracy_outside_words')}"
              + (f" ({wd['test_zero_length_words']} zero-length words left out: test_per_phone.json's "
                 "test_zero_length_word_lines)" if wd.get("test_zero_length_words") else ""))
    print("per-phone test frame accuracy (" + str(total) + " frames): " +
          ", ".join(f"{r['phone']} {r['accuracy']:.2f}" for r in rows))
    return path


def runs(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """(start_frame, end_frame, label) for each run of equal labels."""
    out, s = [], 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[t - 1]:
            out.append((s, t, int(labels[t - 1])))
            s = t
    return out


def _segment_row(ax, labels: np.ndarray, names: list[str], title: str, truth: np.ndarray | None = None,
                 offset: int = 0) -> None:
    """The runs of ``labels`` as coloured spans, frame ``offset`` first."""
    cmap = plt.get_cmap("tab20")
    for s, e, lab in runs(labels):
        s, e = s + offset, e + offset
        wrong = truth is not None and bool((truth[s - offset:e - offset] != lab).any())
        ax.axvspan(s, e, color=cmap(lab % 20), alpha=0.55 if not wrong else 0.25, lw=0)
        ax.axvline(s, color="k", lw=0.4)
        if e - s >= 3 and lab >= 0:
            ax.text((s + e) / 2, 0.5, names[lab], ha="center", va="center", fontsize=6,
                    color="red" if wrong else "black")
    ax.set_yticks([])
    ax.set_ylabel(title, rotation=0, ha="right", va="center", fontsize=8)
    ax.set_xlim(offset, offset + len(labels))


def segments_figure(dm, outputs: list[Utterance], decoded: dict[int, np.ndarray] | None = None):
    """For each (id, predicted, true): log-mel frames, then true and predicted (argmax) segments,
    and the segment decoder's when ``decoded`` (sample id -> labels) has them."""
    names = dm.class_names
    items = {u.id: u for u in dm.test_items()}
    decoded = decoded or {}
    rows = 5 if decoded else 4
    ratios = [4, 0.7, 0.7, 0.7, 1.4] if decoded else [4, 0.7, 0.7, 1.4]
    fig, axes = plt.subplots(rows * len(outputs), 1, figsize=(14, (0.3 * rows + 1.8) * len(outputs)),
                             gridspec_kw={"height_ratios": ratios * len(outputs), "hspace": 0.05},
                             squeeze=False)
    axes = axes[:, 0]
    for k, (sid, pred, true) in enumerate(outputs):
        feats = items[sid].x.numpy()  # (T, F) log-mel energies
        a0, a1, a2 = axes[rows * k: rows * k + 3]
        gap = axes[rows * k + rows - 1]
        gap.axis("off")
        a0.imshow(feats.T, origin="lower", aspect="auto", cmap="magma", interpolation="nearest")
        acc = float((pred == true)[true >= 0].mean()) if (true >= 0).any() else float("nan")
        a0.set_title(f"{dm.describe(sid)}  (frame accuracy {acc:.3f})", fontsize=9)
        a0.set_ylabel("mel bin")
        a0.set_xticks([])
        a0.set_xlim(-0.5, len(true) - 0.5)
        _segment_row(a1, true, names, "true")
        a1.set_xticks([])
        _segment_row(a2, pred, names, "argmax", truth=true)
        last = a2
        if decoded:
            a2.set_xticks([])
            last = axes[rows * k + 3]
            _segment_row(last, decoded[sid], names, "decoder", truth=true)
        last.set_xlabel("frame (10 ms); red text: a segment with wrong frames", fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.97, bottom=0.03)
    return fig


SILENCES = ("h#", "pau", "brth", "sil", "epi")


def default_query_frame(y: np.ndarray | None, limit: int, names: list[str] | None = None) -> int:
    """The middle frame of the longest phone (not a silence, when ``names`` are given) among
    the first ``limit`` frames, or the middle of them without labels."""
    if y is None or not len(y):
        return max(0, limit // 2 - 1)
    speech = lambda lab: lab >= 0 and not (names and names[lab] in SILENCES)  # noqa: E731
    best = max(runs(y[:limit]), key=lambda r: (speech(r[2]), r[1] - r[0]))
    return (best[0] + best[1] - 1) // 2


def attention_figure(dm, model, sample_id: int, layer: int = -1, max_frames: int = 300, heads: Heads = "mean",
                     query_frame: int | None = None):
    """One query frame's attention row over the frames of one test utterance, drawn over its
    log-mel spectrogram (grey; the colour's opacity grows with the weight), one panel per
    chosen head, the true phones beneath; the title names the query frame and its phone.

    The query is ``query_frame`` or, when None, the middle of the longest phone among the
    first ``max_frames`` frames; only the rows up to it are expanded (a windowed layer keeps
    its band, never T x T).
    """
    item = next(u for u in dm.test_items() if u.id == sample_id)
    T = item.x.shape[0]
    y = item.y.numpy() if item.y is not None else None  # an Utterance's labels; None: unlabelled audio
    names = list(dm.class_names) if y is not None else None
    q = min(T - 1, default_query_frame(y, min(T, max_frames), names) if query_frame is None else query_frame)
    with inference(model):
        batch = to_model(dm.collate([{"x": item.x, "id": sample_id}]), model)
        vs = model.encoder(batch)
        w = model.backbone.attention_weights(vs, layer=layer, queries=q + 1)  # (1, H, q + 1, T)
    rows, labels = pick_heads(w[0, :, q].float().cpu(), heads)  # (P, T)
    rows = rows.numpy()
    P = rows.shape[0]
    # the frames around the query that hold its weight, at least 30 on each side
    far = np.nonzero((rows > 1e-3 * rows.max()).any(0))[0]
    span = max(30, int(np.abs(far - q).max()) + 5 if len(far) else 30)
    lo, hi = max(0, q - span), min(T, q + span + 1)
    feats = item.x.numpy()[lo:hi].T  # (F, hi - lo) log-mel energies
    vmax = shared_max([rows])
    phone = f" (phone '{names[int(y[q])]}')" if y is not None and y[q] >= 0 else ""
    # the encoder's window overrides the backbone's (as in Backbone.forward)
    win = vs.window if vs.window is not None else model.backbone.blocks[layer].attn.window  # AttentionWeights
    extent = (lo - 0.5, hi - 0.5, -0.5, feats.shape[0] - 0.5)
    ratios = [3] * P + ([0.6] if y is not None else [])
    fig, axes = plt.subplots(len(ratios), 1, figsize=(9, 1.5 * P + 1.6), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": ratios}, layout="constrained")
    axes = axes[:, 0]
    cmap = plt.get_cmap(CMAP)
    norm = Normalize(0.0, vmax)
    for j in range(P):
        ax = axes[j]
        ax.imshow(feats, origin="lower", aspect="auto", cmap="gray", interpolation="nearest", extent=extent)
        rgba = cmap(norm(np.broadcast_to(rows[j, lo:hi], feats.shape)))
        rgba[..., 3] = 0.9 * np.clip(rows[j, lo:hi] / vmax, 0, 1)  # transparent where no weight
        ax.imshow(rgba, origin="lower", aspect="auto", interpolation="nearest", extent=extent)
        ax.axvline(q, color="cyan", lw=0.8, ls="--")
        ax.set_ylabel(f"{labels[j]}\nmel bin", fontsize=8)
    axes[0].set_title(f"attention of query frame {q}{phone}, {block_name(model.backbone, layer)}, {heads_name(heads)}, "
                      f"{f'window={win}' if win is not None else 'no window'} (dashed: the query)\n{dm.describe(sample_id)}", fontsize=8)
    if y is not None:
        _segment_row(axes[-1], y[lo:hi], names, "true phone", offset=lo)
    axes[-1].set_xlim(lo - 0.5, hi - 0.5)
    axes[-1].set_xlabel("key frame (10 ms)", fontsize=8)
    attention_colorbar(fig, ScalarMappable(norm, cmap), list(axes[:P]))
    return fig


class PerPhoneReport(Report):
    """``test_per_phone.json`` and ``test_per_phone.csv`` (see ``per_phone_report``)."""

    def write(self, ctx: ReportContext) -> list[Path]:
        outputs = utterances(ctx)
        extra = segment_and_word_scores(ctx, outputs)
        return [per_phone_report(outputs, list(ctx.data.class_names), ctx.out_dir, extra)]


class SegmentsReport(Report):
    """``speech_segments.png``: the first ``utterances`` test utterances.

    Args:
        utterances: how many to draw (0: none).
    """

    def __init__(self, utterances: int = 3) -> None:
        self.utterances = utterances

    def write(self, ctx: ReportContext) -> list[Path]:
        chosen = utterances(ctx)[: self.utterances]
        if not chosen:
            return []
        return [ctx.save_figure(segments_figure(ctx.data, chosen, decoded_labels(ctx)), "speech_segments.png", dpi=90)]


class FrameAttentionReport(Report):
    """``attention.png``: one layer's attention over the frames of the first test utterance,
    when the backbone has attention (a window MLP or BiLSTM has none).

    Args:
        layer: the backbone block.
        max_frames: the query is among the first ``max_frames`` frames (only the rows up to it
            are expanded).
        heads: ``"mean"`` (one panel: the mean over the block's heads), ``"each"`` (a panel per
            head) or a list of head indices.
        query_frame: the query frame; None: the middle of the longest phone in the first
            ``max_frames`` frames.
    """

    def __init__(self, layer: int = -1, max_frames: int = 300, heads: str | list[int] = "mean",
                 query_frame: int | None = None) -> None:
        self.layer, self.max_frames, self.heads = layer, max_frames, check_heads(heads)
        self.query_frame = query_frame

    def write(self, ctx: ReportContext) -> list[Path]:
        items = ctx.test_items(1)
        backbone = ctx.model.backbone
        if not items or not isinstance(backbone, AttentionWeights):
            log.info("speech: %s has no attention weights to plot", type(backbone).__name__)
            return []
        fig = attention_figure(ctx.data, ctx.model, items[0].id, self.layer, self.max_frames, self.heads,
                               self.query_frame)
        return [ctx.save_figure(fig, "attention.png", dpi=90)]
