"""Shipped predictors: trained models to use without training (``vecset.pretrained(name)``,
``vecset predict --model NAME``), as timm's ``create_model(name, pretrained=True)`` or
Chemprop's shipped checkpoints.

Each predictor is a folder ``vecset/models/<name>/`` inside the package (package data:
``pyproject.toml``'s ``[tool.setuptools.package-data]``, so an editable install reads the
checkout's folder and a wheel carries a copy; found with ``importlib.resources``):

- ``model.pt``: what predicting needs and nothing else: the fp32 weights, the model's
  hyperparameters (the config's ``model:`` section, which rebuilds every module) and, under
  ``predictor``, what the data module computed from the training data (the descriptor
  scaler's mean and std, the training molecules for the applicability-domain check, the
  pixel scaling). Read with ``torch.load(weights_only=True)``: no code from the file runs.
- ``card.json``: the model card's numbers, written by ``scripts/ship_predictors.py`` (which
  ``make models`` runs): the config and command, the data, split and licence, the test
  metrics of the training run (its ``results.json``), a fixed slice of the test split with
  its metric through this predictor, and predictions for three known inputs (the tests hold
  both).

``predict(inputs)`` takes plain inputs (SMILES strings, words, 8x8 images or image files)
and returns one row (a dict) per input, in order: an input that cannot be predicted gets its
reason in the ``error`` column and empty values, the other rows are still predicted, and
nothing is dropped.

Predicting imports torch, the model's own encoder, backbone and head (and RDKit for molecules),
not Lightning, torchmetrics or the jobs' data modules: the model is rebuilt as plain
``nn.Module``s from its hyperparameters (``build_model``), so that a command answers in seconds.
"""

from __future__ import annotations

import copy
import csv
import importlib
import io
import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

MODEL_FILE, CARD_FILE = "model.pt", "card.json"


@dataclass(frozen=True)
class Entry:
    """A shipped predictor: its kind (which ``Predictor`` class reads it), the config it was
    trained with and the guide that holds its model card."""

    kind: str
    config: str
    docs: str


# name -> what it is; a name whose folder is missing is listed by ``available`` as not built
REGISTRY: dict[str, Entry] = {
    "freesolv": Entry("molecule", "configs/freesolv.yaml", "docs/molecules.md"),
    "solubility": Entry("molecule", "configs/solubility.yaml", "docs/molecules.md"),
    "b3db": Entry("molecule", "configs/b3db.yaml", "docs/molecules.md"),
    "g2p": Entry("g2p", "configs/g2p.yaml", "docs/text.md"),
    "digits": Entry("image", "configs/digits.yaml", "docs/images.md"),
    "fashion_mnist": Entry("image", "configs/fashion_mnist.yaml", "docs/images.md"),
}


class PredictorError(ValueError):
    """A predictor that cannot be used (unknown name, not built); the first line says which."""


def models_dir() -> Path:
    """``vecset/models/`` of the installed package (the checkout's own in an editable install)."""
    return Path(str(resources.files("vecset") / "models"))


def available() -> dict[str, bool]:
    """Every registered name -> whether its files are present."""
    return {name: (models_dir() / name / MODEL_FILE).is_file() for name in REGISTRY}


def pretrained(name: str, directory: str | Path | None = None) -> Predictor:
    """The shipped predictor ``name`` (``REGISTRY``), ready to ``predict``; ``directory``: read
    its ``model.pt`` and ``card.json`` from there instead (a predictor just built)."""
    if name not in REGISTRY:
        raise PredictorError(f"--model {name!r}: no such shipped predictor; available: {', '.join(REGISTRY)}")
    folder = Path(directory) if directory is not None else models_dir() / name
    if not (folder / MODEL_FILE).is_file():
        raise PredictorError(f"--model {name!r}: {folder / MODEL_FILE} is missing (this install has no "
                             f"checkpoint for it; `make models` builds it from {REGISTRY[name].config})")
    bundle = torch.load(folder / MODEL_FILE, map_location="cpu", weights_only=True)
    card = json.loads((folder / CARD_FILE).read_text()) if (folder / CARD_FILE).is_file() else {}
    cls = {"molecule": MoleculePredictor, "g2p": G2PPredictor, "image": ImagePredictor}[REGISTRY[name].kind]
    return cls(name, folder / MODEL_FILE, bundle, card)


class PredictorModel(nn.Module):
    """encoder -> backbone -> head: a TaskModule's forward (``training/step.py``'s
    ``forward_task``) without Lightning, with the same parameter names (``encoder.*``,
    ``backbone.*``, ``head.*``), so a TaskModule's state dict loads into it as it is."""

    def __init__(self, encoder: nn.Module, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.encoder, self.backbone, self.head = encoder, backbone, head

    def forward(self, batch: dict) -> Any:
        vs = self.backbone(self.encoder(batch))
        return self.head(vs, batch.get("features"), batch=batch if self.head.needs_batch else None)


def instantiate(spec: Any, where: str) -> Any:
    """A config's ``class_path``/``init_args`` (nested ones too) -> the object, as LightningCLI
    built it for the training run. Only vecset's own classes: a ``model.pt`` names no other code
    to run (``torch.load(weights_only=True)`` reads it as data)."""
    if isinstance(spec, list):
        return [instantiate(v, f"{where}[{i}]") for i, v in enumerate(spec)]
    if not isinstance(spec, dict):
        return spec
    if "class_path" not in spec:
        return {k: instantiate(v, f"{where}.{k}") for k, v in spec.items()}
    path = spec["class_path"]
    if not (isinstance(path, str) and path.startswith("vecset.")):
        raise PredictorError(f"{where}.class_path: {path!r} is not one of vecset's classes (a shipped predictor "
                             "builds vecset's encoders, backbones and heads only)")
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    # dict_kwargs: jsonargparse's place for a **kwargs class's other arguments
    args = {**(spec.get("init_args") or {}), **(spec.get("dict_kwargs") or {})}
    return cls(**{k: instantiate(v, f"{where}.init_args.{k}") for k, v in args.items()})


def build_model(path: Path, bundle: dict | None = None) -> PredictorModel:
    """The model of a ``model.pt`` (``bundle``: its contents, when already read): encoder,
    backbone and head rebuilt from the hyperparameters of the TaskModule that trained them,
    its weights loaded (strictly: every tensor, no other), in eval mode on the CPU."""
    if bundle is None:
        bundle = torch.load(path, map_location="cpu", weights_only=True)
    hp = bundle["hyper_parameters"]
    if hp.get("_class_path") != "vecset.pipelines.TaskModule":
        raise PredictorError(f"{path}: hyper_parameters._class_path is {hp.get('_class_path')!r}; a shipped "
                             "predictor is a vecset.pipelines.TaskModule's (one encoder, backbone and head)")
    model = PredictorModel(*(instantiate(hp[part], f"{path}: hyper_parameters.{part}")
                             for part in ("encoder", "backbone", "head")))
    model.load_state_dict(bundle["state_dict"])
    return model.eval()


def _batches(n: int, size: int) -> list[range]:
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


class Predictor:
    """A shipped model with its input checks: ``predict(inputs)`` -> one row per input.

    ``columns``: the row's keys, in order (``input`` first, ``error`` last: empty where the row
    was predicted)."""

    columns: list[str]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        self.name, self.card, self.extra = name, card, bundle["predictor"]
        self.model = build_model(path, bundle)
        # a deep ensemble's other members (``members``: their weights; same config, other seeds)
        self.models = [self.model]
        for state in bundle.get("members", []):
            member = copy.deepcopy(self.model)
            member.load_state_dict(state)
            self.models.append(member.eval())

    def _row(self, text: str, error: str = "") -> dict:
        return {c: "" for c in self.columns} | {"input": text, "error": error}

    def predict(self, inputs: Sequence[Any], batch_size: int = 64) -> list[dict]:
        rows, ready = [], []  # ready: (row index, prepared item)
        for i, value in enumerate(inputs):
            try:
                item = self.prepare(value)
            except ValueError as e:
                rows.append(self._row(self.describe(value), str(e)))
                continue
            rows.append(self._row(self.describe(value)))
            ready.append((i, item))
        with torch.inference_mode():
            for part in _batches(len(ready), batch_size):
                chosen = [ready[j] for j in part]
                values = self.run([item for _, item in chosen])
                for (i, _), v in zip(chosen, values, strict=True):
                    rows[i].update(v)
        return rows

    def describe(self, value: Any) -> str:
        return str(value)

    def prepare(self, value: Any) -> Any:
        """One input -> what ``run`` batches; ValueError (the row's error) when it cannot be."""
        raise NotImplementedError

    def run(self, items: list) -> list[dict]:
        """A batch of prepared items -> the predicted columns of each row."""
        raise NotImplementedError

    def score(self, rows: list[dict], targets: list) -> dict:
        """The job's test metric of predicted ``rows`` against ``targets`` (the card's slice and
        test numbers); an error row is an error here: every test input must be predicted."""
        bad = [r for r in rows if r["error"]]
        if bad:
            raise ValueError(f"{len(bad)} of {len(rows)} inputs were not predicted, e.g. {bad[0]['input']!r}: "
                             f"{bad[0]['error']}")
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows but {len(targets)} targets")
        return self._score(rows, targets) | {"count": len(rows)}

    def _score(self, rows: list[dict], targets: list) -> dict:
        return {"accuracy": float(np.mean([r["prediction"] == t for r, t in zip(rows, targets, strict=True)]))}


class MoleculePredictor(Predictor):
    """SMILES -> the property (regression: the value in the target's units, ``<target>_std``
    where the head predicts a variance or the predictor is an ensemble; classification: the class, its probability,
    an ensemble's ``probability_std`` (its members' spread) and ``P(<class>)``), with the applicability domain: ``train_similarity``, the Tanimoto
    similarity of the molecule's Morgan fingerprint to the nearest training molecule, and
    ``out_of_domain`` when it is below the card's threshold. A model trained with 3-D geometry
    (``extra["geometry"]``; a bundle without the key is 2-D) embeds a conformer per SMILES, as
    its training did, and adds ``conformer``: False where RDKit could not embed the molecule, so
    that it was predicted from its 2-D graph alone (a single atom needs no conformer: True). A
    model trained with the solvation atom features (``extra["charges"]``, ``extra["surface"]``)
    computes them as its training did. One trained with several conformers per molecule
    (``extra["conformers"]`` > 1) predicts, as its validation did, from conformer 0, the one a
    single-conformer embedding gives: the others are not embedded."""

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        from vecset.encoders.graph.descriptors import DescriptorScaler
        from vecset.encoders.graph.reading import MoleculeFeaturizer
        from vecset.encoders.graph.similarity import NearestNeighbours

        e = self.extra
        self.geometry = bool(e.get("geometry", False))  # bundles packed before geometry have no key: 2-D
        # and those packed before the solvation features have no charges / surface keys: without them
        self.featurizer = MoleculeFeaturizer(e["max_atoms"], e["max_dist"], e["lap_pe_k"], e["descriptors"],
                                             self.geometry, bool(e.get("charges", False)),
                                             bool(e.get("surface", False)))  # conformers: 1, conformer 0
        self.scaler = None
        if e["descriptors"]:
            self.scaler = DescriptorScaler(e["descriptor_clip"])
            self.scaler.mean, self.scaler.std = e["descriptor_mean"].double().numpy(), e["descriptor_std"].double().numpy()
        # the fingerprints packed with the model, when it has them (computing them takes a second or two)
        self.neighbours = NearestNeighbours(e["train_smiles"], e.get("train_fingerprints"))
        self.threshold = float(e["domain_threshold"])
        self.classes: list[str] | None = e.get("classes")
        if self.classes is not None:
            self.values = ["prediction", "probability", *(["probability_std"] if len(self.models) > 1 else []),
                           *(f"P({c})" for c in self.classes)]
        else:
            targets = e["targets"]
            spread = e.get("has_std") or bundle.get("members")
            self.values = [*targets, *((f"{t}_std" for t in targets) if spread else ())]
        self.columns = ["input", *self.values, "train_similarity", "out_of_domain",
                        *(["conformer"] if self.geometry else []), "error"]

    def prepare(self, value: Any) -> dict:
        from vecset.encoders.graph.molecules import InvalidMolecule

        if not isinstance(value, str):
            raise ValueError(f"expected a SMILES string, got {type(value).__name__}")
        try:
            item = self.featurizer(value).item(id=0)
        except InvalidMolecule as e:
            raise ValueError(str(e)) from None
        if self.scaler is not None:
            self.scaler.standardize([item])
        item["similarity"] = self.neighbours.similarity(value)
        return item

    def _score(self, rows: list[dict], targets: list) -> dict:
        """Regression: RMSE and MAE over all targets (``targets``: one list per row);
        classification: accuracy and, for two classes, ROC-AUC of ``P(<class 1>)``."""
        if self.classes is None:
            err = np.array([[r[t] for t in self.extra["targets"]] for r in rows]) - np.array(targets)
            return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err)))}
        out = super()._score(rows, targets)
        truth = [int(t == self.classes[-1]) for t in targets]
        if len(self.classes) == 2 and 0 < sum(truth) < len(truth):
            from sklearn.metrics import roc_auc_score

            out["roc_auc"] = float(roc_auc_score(truth, [r[f"P({self.classes[1]})"] for r in rows]))
        return out

    def run(self, items: list[dict]) -> list[dict]:
        """Each member's prediction, combined as ``pipelines/ensemble.py`` does: the mean of the
        members' means (or softmax probabilities), the std from their spread plus their own
        variances (a mean-variance head's)."""
        batch = self.featurizer.collate(items)
        outs = [m(batch).float() for m in self.models]
        rows = [{"train_similarity": round(it["similarity"], 4), "out_of_domain": it["similarity"] < self.threshold}
                for it in items]
        if self.geometry:  # the embedding failed: the 2-D graph alone (geometry.py), said in the row
            from vecset.encoders.graph.geometry import FAILED

            for r, it in zip(rows, items, strict=True):
                r["conformer"] = int(it["geometry"]) != FAILED
        if self.classes is not None:
            probs = torch.stack([o.softmax(-1) for o in outs])  # (K, B, classes)
            prob, spread = probs.mean(0), probs.std(0, correction=0)  # the members' mean and spread
            for r, p, s in zip(rows, prob.tolist(), spread.tolist(), strict=True):
                k = int(np.argmax(p))
                r |= {"prediction": self.classes[k], "probability": p[k]}
                if len(self.models) > 1:
                    r["probability_std"] = s[k]
                r |= {f"P({c})": v for c, v in zip(self.classes, p, strict=True)}
            return rows
        parts = [m.head.mean_std(o) for m, o in zip(self.models, outs, strict=True)]
        means = torch.stack([mean for mean, _ in parts])  # (K, B, T)
        var = means.var(0, correction=0)  # the members' spread (pipelines/ensemble.py's combine)
        if parts[0][1] is not None:
            var = var + torch.stack([s ** 2 for _, s in parts]).mean(0)
        mean = means.mean(0)
        std = var.sqrt() if len(self.models) > 1 or parts[0][1] is not None else None
        for i, r in enumerate(rows):
            r |= dict(zip(self.extra["targets"], mean[i].tolist(), strict=True))
            if std is not None:
                r |= {f"{t}_std": v for t, v in zip(self.extra["targets"], std[i].tolist(), strict=True)}
        return rows


class G2PPredictor(Predictor):
    """Words -> pronunciations (ARPAbet phones, space-separated) and ``finished`` (False: the
    decoder reached ``max_len`` without ending the word). A word with a character the training
    dictionary never had (its alphabet: ``alphabet``) is an error row: the model has no
    embedding for it."""

    columns = ["input", "pronunciation", "finished", "error"]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        enc = self.model.encoder
        self.alphabet = "".join(sorted(t for t in enc.vocab.tokens if not (t.startswith("<") and t.endswith(">"))))

    def prepare(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected a word (a string), got {type(value).__name__}")
        if not value.strip():
            raise ValueError("empty word")
        if any(c.isspace() for c in value):
            raise ValueError(f"{value!r} holds a space: one word per input")
        enc = self.model.encoder
        outside = sorted({t for t in enc.tokens_of(value) if t not in enc.vocab.index})
        if outside:
            raise ValueError(f"{value!r}: characters outside the alphabet the model was trained on: "
                             f"{''.join(outside)!r} (its alphabet: {self.alphabet!r})")
        return value

    def _score(self, rows: list[dict], targets: list) -> dict:
        """Word error rate (not exactly one of the word's pronunciations) and phone error rate
        against the closest pronunciation (``targets``: each word's list of phone strings)."""
        from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate

        preds = [r["pronunciation"].split() for r in rows]
        refs = [[ref.split() for ref in rs] for rs in targets]
        per, wer = PhoneErrorRate(), WordErrorRate()
        per.update(preds, refs)
        wer.update(preds, refs)
        return {"wer": float(wer.compute()), "per": float(per.compute())}

    def run(self, items: list[str]) -> list[dict]:
        from vecset.encoders.text.collate import collate_text

        batch = collate_text([{"text": w, "id": i} for i, w in enumerate(items)])
        preds = self.model.head.predict(self.model(batch), batch)
        return [{"pronunciation": " ".join(t), "finished": bool(f)}
                for t, f in zip(preds["tokens"], preds["finished"], strict=True)]


class ImagePredictor(Predictor):
    """Grey images -> the class and its probability (digits: 8x8, Fashion-MNIST: 28x28). An
    input is an array of the model's size (H x W or 1 x H x W) in its data set's raw range
    (``raw_range``: scikit-learn's ``load_digits`` 0..16, Fashion-MNIST's bytes 0..255), or an
    image file, read grey, resized to H x W (antialiased bilinear) and scaled to that range.
    Both data sets are bright on dark (digits: ink high, background 0; Fashion-MNIST: light
    clothes on a black background): invert a dark drawing or photo on white first.

    ``extra``: ``classes``, ``raw_range``, ``scale`` (the model's input is raw * scale + shift),
    ``size`` (H, W; 8x8 when absent: the digits bundle predates it) and ``dataset`` (the name
    the range error gives)."""

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        self.classes: list[str] = self.extra["classes"]
        self.size: tuple[int, int] = tuple(self.extra.get("size", (8, 8)))
        self.dataset: str = self.extra.get("dataset", "load_digits")
        self.columns = ["input", "prediction", "probability", "error"]

    def describe(self, value: Any) -> str:
        if isinstance(value, str | Path):
            return str(value)
        return f"array{list(np.shape(value))}"

    def prepare(self, value: Any) -> torch.Tensor:
        low, high = self.extra["raw_range"]
        h, w = self.size
        if isinstance(value, str | Path):
            from vecset.encoders.image.reading import read_image

            if not Path(value).is_file():
                raise ValueError(f"{value}: no such image file")
            try:
                img = read_image(Path(value), 1)
            except (OSError, ValueError) as e:
                raise ValueError(f"{value}: {str(e).splitlines()[0]}") from None
            img = img.float() / (255.0 if img.dtype == torch.uint8 else 1.0)  # (1, H', W') in [0, 1]
            # torchvision's v2.Resize(antialias=True) on a float image, without importing torchvision
            x = torch.nn.functional.interpolate(img[None], size=[h, w], mode="bilinear", align_corners=False,
                                                antialias=True)[0] * high
        else:
            x = torch.as_tensor(np.asarray(value, dtype=np.float64)).float()
            if x.shape not in ((h, w), (1, h, w)):
                raise ValueError(f"expected an image of shape [{h}, {w}] (or [1, {h}, {w}]), got shape {list(x.shape)}")
            if not torch.isfinite(x).all() or x.min() < low or x.max() > high:
                raise ValueError(f"pixel values must be finite and within {low}..{high} (the range of {self.dataset}), "
                                 f"got {float(x.min()):g}..{float(x.max()):g}")
        scale, shift = self.extra["scale"]
        return (x.reshape(1, h, w) * scale + shift).float()

    def run(self, items: list[torch.Tensor]) -> list[dict]:
        prob = self.model({"image": torch.stack(items)}).float().softmax(-1)
        p, k = prob.max(-1)
        return [{"prediction": self.classes[i], "probability": v} for i, v in zip(k.tolist(), p.tolist(), strict=True)]


# -- the command line: vecset predict --model NAME ... ---------------------------------------
INPUT_FLAGS = {"molecule": "--smiles", "g2p": "--words", "image": "--images"}


def read_inputs(path: Path, column: str | None) -> list[str]:
    """A CSV's ``column`` (the first column matching it), or a text file's lines (one input per
    line; blank lines kept as empty inputs, so row numbers match lines)."""
    from vecset.encoders.files import read_csv_rows

    if not path.is_file():
        raise PredictorError(f"--input {path}: no such file")
    if path.suffix.lower() == ".csv":
        df, _ = read_csv_rows(path)
        if column not in df.columns:
            raise PredictorError(f"--input {path}: no column {column!r} (--column); its columns are {list(df.columns)}")
        return [str(v) for v in df[column]]
    return path.read_text().splitlines()


def format_value(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def write_rows(rows: list[dict], columns: list[str], out) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([format_value(r[c]) for c in columns])


def command_main(argv: list[str]) -> int:
    """``vecset predict --model NAME`` with ``--smiles`` / ``--words`` / ``--images`` or
    ``--input FILE``: a CSV of the rows to stdout or ``--out``; the count of error rows on stderr."""
    import argparse

    p = argparse.ArgumentParser(prog="vecset predict --model",
                                description="Predict with a shipped model (no config or checkpoint needed).")
    p.add_argument("--model", required=True, help=f"one of: {', '.join(REGISTRY)}")
    p.add_argument("--smiles", nargs="+", help="SMILES strings (molecule models)")
    p.add_argument("--words", nargs="+", help="words (g2p)")
    p.add_argument("--images", nargs="+", help="image files (digits, fashion_mnist)")
    p.add_argument("--input", type=Path, help="a CSV (its --column) or a text file, one input a line")
    p.add_argument("--column", default=None, help="the --input CSV's column (default: smiles, word or image)")
    p.add_argument("--out", type=Path, help="write the CSV here (default: stdout)")
    args = p.parse_args(argv)
    try:
        entry = REGISTRY.get(args.model)
        if entry is None:
            raise PredictorError(f"--model {args.model!r}: no such shipped predictor; available: {', '.join(REGISTRY)}")
        flag = INPUT_FLAGS[entry.kind]
        given = {f: getattr(args, f[2:]) for f in INPUT_FLAGS.values() if getattr(args, f[2:])}
        wrong = [f for f in given if f != flag]
        if wrong:
            raise PredictorError(f"{wrong[0]}: not an input of --model {args.model} (it takes {flag} or --input)")
        if (flag in given) == (args.input is not None):
            raise PredictorError(f"--model {args.model}: give its inputs with {flag} or --input FILE (one of them)")
        column = args.column or {"molecule": "smiles", "g2p": "word", "image": "image"}[entry.kind]
        inputs = given[flag] if flag in given else read_inputs(args.input, column)
        predictor = pretrained(args.model)
    except PredictorError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    rows = predictor.predict(inputs)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as f:
            write_rows(rows, predictor.columns, f)
    else:
        text = io.StringIO()
        write_rows(rows, predictor.columns, text)
        sys.stdout.write(text.getvalue())
    failed = sum(bool(r["error"]) for r in rows)
    if failed:
        sys.stderr.write(f"{failed} of {len(rows)} inputs could not be predicted (their error column says why)\n")
    flagged = sum(r.get("out_of_domain") is True for r in rows)
    if flagged:
        sys.stderr.write(f"{flagged} of {len(rows)} molecules are out of the training domain (out_of_domain: nearest "
                         f"training molecule's similarity below {predictor.threshold})\n")
    flat = sum(r.get("conformer") is False for r in rows)
    if flat:
        sys.stderr.write(f"{flat} of {len(rows)} molecules have no 3-D conformer (conformer: False; RDKit could not "
                         "embed them, predicted from the 2-D graph alone)\n")
    return 0


def wants_shipped_model(argv: list[str]) -> bool:
    """``vecset predict --model NAME`` (a shipped predictor) rather than LightningCLI's predict,
    whose ``--model`` takes a config file, a class name or ``--model.init_args...``: a lower-case
    name without a dot or slash, and no ``--config``."""
    if argv[:1] != ["predict"] or any(a in ("--config", "-c") or a.startswith("--config=") for a in argv):
        return False
    for i, a in enumerate(argv[1:], 1):
        value = a.split("=", 1)[1] if a.startswith("--model=") else argv[i + 1] if a == "--model" and i + 1 < len(argv) else None
        if value is not None and re.fullmatch(r"[a-z0-9_-]+", value):
            return True
    return False


__all__ = ["REGISTRY", "Entry", "G2PPredictor", "ImagePredictor", "MoleculePredictor", "Predictor", "PredictorError",
           "available", "build_model", "command_main", "models_dir", "pretrained", "wants_shipped_model"]
