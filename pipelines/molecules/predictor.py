"""The molecule predictor: SMILES -> the property a packed model folder predicts, with its
applicability domain (``vecset.pretrained("freesolv")``, ``vecset predict --model <run dir>``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from vecset.pipelines.predictor import Predictor

DOMAIN_THRESHOLD = 0.3  # Tanimoto to the nearest training molecule below which a molecule is flagged


class MoleculePredictor(Predictor):
    """SMILES -> the property (regression: the value in the target's units, ``<target>_std``
    where the head predicts a variance or the predictor is an ensemble; classification: the
    class, its probability, an ensemble's ``probability_std`` (its members' spread) and
    ``P(<class>)``), with the applicability domain: ``train_similarity``, the Tanimoto
    similarity of the molecule's Morgan fingerprint to the nearest training molecule;
    ``out_of_domain`` when it is below the card's threshold or the molecule is of a kind no
    training molecule is (several fragments, a net charge, a metal: ``encoders/graph/domain.py``),
    ``out_of_domain_reason`` saying which. A model trained with 3-D geometry
    (``extra["geometry"]``; a bundle without the key is 2-D) embeds a conformer per SMILES, as
    its training did, and adds ``conformer``: False where RDKit could not embed the molecule, so
    that it was predicted from its 2-D graph alone (a single atom needs no conformer: True). A
    model trained with the solvation atom features (``extra["charges"]``, ``extra["surface"]``)
    computes them as its training did. One trained with several conformers per molecule
    (``extra["conformers"]`` > 1) predicts, as its validation did, from conformer 0. One packed
    with ``--blend`` (``extra["blend"]``) is a weighted mean with a descriptor model read from
    ``peer.skops`` beside ``model.pt`` (``pipelines/molecules/blend.py``); its ``_std`` columns are
    then the attention part's spread, times its weight."""

    input_column, input_flag = "smiles", "--smiles"
    known_inputs = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O"]  # ethanol, phenol, aspirin

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        from vecset.encoders.graph.descriptors import DescriptorScaler
        from vecset.encoders.graph.domain import kinds_absent
        from vecset.encoders.graph.reading import MoleculeFeaturizer
        from vecset.encoders.graph.similarity import NearestNeighbours

        e = self.extra
        self.geometry = bool(e.get("geometry", False))  # bundles packed before geometry have no key: 2-D
        # and those packed before the solvation features (or the physics token) have no such keys: without them
        self.featurizer = MoleculeFeaturizer(e["max_atoms"], e["max_dist"], e["lap_pe_k"], e["descriptors"],
                                             self.geometry, bool(e.get("charges", False)),
                                             bool(e.get("surface", False)),  # conformers: 1, conformer 0
                                             physics=bool(e.get("physics", False)))
        self.scaler = None
        if e["descriptors"]:
            self.scaler = DescriptorScaler(e["descriptor_clip"])
            self.scaler.mean, self.scaler.std = e["descriptor_mean"].double().numpy(), e["descriptor_std"].double().numpy()
        # the fingerprints packed with the model, when it has them (computing them takes a second or two)
        self.neighbours = NearestNeighbours(e["train_smiles"], e.get("train_fingerprints"))
        self.threshold = float(e["domain_threshold"])
        self.unseen_kinds = kinds_absent(e["train_smiles"])  # salts, ions, metals: flagged where training had none
        self.classes: list[str] | None = e.get("classes")
        if self.classes is not None:
            predicted = ["prediction", "probability", *(["probability_std"] if len(self.models) > 1 else []),
                         *(f"P({c})" for c in self.classes)]
        else:
            targets = e["targets"]
            spread = self.model.head.values == 2 or len(self.models) > 1  # a variance head, or an ensemble
            predicted = [*targets, *((f"{t}_std" for t in targets) if spread else ())]
        self.values = [*predicted, "train_similarity", "out_of_domain", "out_of_domain_reason",
                       *(["conformer"] if self.geometry else [])]
        # a blend with a descriptor model (``vecset pack --blend``): its record, and the model beside model.pt
        self.blend: dict | None = e.get("blend")
        self.peer = None
        if self.blend is not None:
            from vecset.pipelines.molecules.blend import PEER_FILE, load_peer

            self.peer = load_peer(Path(path).parent / PEER_FILE)

    def fit_blend(self, config: dict, peer: str) -> dict:
        """Blend this predictor with ``peer`` tuned on the run's training and validation splits
        (``pipelines/molecules/blend.py``); the blend's record, also kept in ``extra``."""
        from vecset.pipelines.molecules.blend import fit_blend

        self.blend, self.peer = fit_blend(self, config, peer)
        self.extra["blend"] = self.blend
        return self.blend

    def _blended(self, attention: torch.Tensor, items: list[dict]) -> tuple[torch.Tensor, float]:
        """``attention`` (B, classes) probabilities or (B, 1) values, blended with the peer's on
        the items' raw descriptors; the attention model's weight (1 without a blend)."""
        if self.peer is None:
            return attention, 1.0
        from vecset.pipelines.molecules.blend import descriptor_matrix, peer_output

        w = float(self.blend["weight"])
        peer = torch.as_tensor(peer_output(self.peer, descriptor_matrix(items), self.classes is not None),
                               dtype=attention.dtype).reshape(attention.shape)
        return w * attention + (1.0 - w) * peer, w

    def prepare(self, value: Any) -> dict:
        from vecset.encoders.graph.domain import kinds_of
        from vecset.encoders.graph.molecules import InvalidMolecule, parse_smiles

        if not isinstance(value, str):
            raise ValueError(f"expected a SMILES string, got {type(value).__name__}")
        try:
            item = self.featurizer(value).item(id=0)
        except InvalidMolecule as e:
            raise ValueError(str(e)) from None
        if self.scaler is not None:
            self.scaler.standardize([item])
        item["similarity"] = self.neighbours.similarity(value)
        kinds = kinds_of(parse_smiles(value)) if self.unseen_kinds else {}
        item["reasons"] = [text for kind, text in kinds.items() if kind in self.unseen_kinds]
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

    def domain_rows(self, items: list[dict]) -> list[dict]:
        rows = []
        for it in items:
            sim = round(it["similarity"], 4)
            reasons = ([f"train_similarity {sim} < {self.threshold}"] if it["similarity"] < self.threshold else [])
            reasons += [f"{r}, which no training molecule has" for r in it["reasons"]]
            rows.append({"train_similarity": sim, "out_of_domain": bool(reasons),
                         "out_of_domain_reason": "; ".join(reasons)})
        return rows

    def run(self, items: list[dict]) -> list[dict]:
        """Each member's prediction, combined as ``pipelines/ensemble.py`` does: the mean of the
        members' means (or softmax probabilities), the std from their spread plus their own
        variances (a mean-variance head's)."""
        batch = self.featurizer.collate(items)
        outs = [m(batch).float() for m in self.models]
        rows = self.domain_rows(items)
        if self.geometry:  # the embedding failed: the 2-D graph alone (geometry.py), said in the row
            from vecset.encoders.graph.geometry import FAILED

            for r, it in zip(rows, items, strict=True):
                r["conformer"] = int(it["geometry"]) != FAILED
        if self.classes is not None:
            probs = torch.stack([o.softmax(-1) for o in outs])  # (K, B, classes)
            prob, spread = probs.mean(0), probs.std(0, correction=0)  # the members' mean and spread
            prob, w = self._blended(prob, items)
            spread = w * spread  # the attention part's spread
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
        mean, w = self._blended(means.mean(0), items)
        std = w * var.sqrt() if len(self.models) > 1 or parts[0][1] is not None else None
        for i, r in enumerate(rows):
            r |= dict(zip(self.extra["targets"], mean[i].tolist(), strict=True))
            if std is not None:
                r |= {f"{t}_std": v for t, v in zip(self.extra["targets"], std[i].tolist(), strict=True)}
        return rows

    def notes(self, rows: list[dict]) -> list[str]:
        out = []
        flagged = sum(r.get("out_of_domain") is True for r in rows)
        if flagged:
            out.append(f"{flagged} of {len(rows)} molecules are out of the training domain (out_of_domain_reason "
                       f"says why: nearest training molecule's similarity below {self.threshold}, or a salt, "
                       "charge or metal no training molecule has)")
        flat = sum(r.get("conformer") is False for r in rows)
        if flat:
            out.append(f"{flat} of {len(rows)} molecules have no 3-D conformer (conformer: False; RDKit could not "
                       "embed them, predicted from the 2-D graph alone)")
        return out

    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """The data module's training-data values, and the test split's SMILES with their targets."""
        from vecset.encoders.graph.similarity import NearestNeighbours
        from vecset.pipelines.molecules.data import MoleculeDataModule

        dm = MoleculeDataModule(**dict(config["data"].get("init_args") or {}))
        dm.setup("fit")
        test = dm.splits["test"]
        train = [it["smiles"] for it in dm.splits["train"]]
        f = dm.features  # conformers for the record: the predictor embeds conformer 0 alone
        extra = {"max_atoms": f.max_atoms, "max_dist": f.max_dist, "lap_pe_k": f.lap_pe_k,
                 "descriptors": f.descriptors, "geometry": f.geometry, "charges": f.charges, "surface": f.surface,
                 "conformers": f.conformers, "physics": f.physics, "train_smiles": train, "train_fingerprints": NearestNeighbours(train).binary(),
                 "domain_threshold": DOMAIN_THRESHOLD, "targets": dm.target_names, "classes": dm.class_names}
        if dm.scaler is not None:
            extra |= {"descriptor_mean": torch.from_numpy(dm.scaler.mean).double(),
                      "descriptor_std": torch.from_numpy(dm.scaler.std).double(), "descriptor_clip": dm.scaler.clip}
        if dm.class_names is not None:
            ys = [dm.class_names[int(it["y"])] for it in test]
        else:
            ys = [[float(v) for v in it["y"].tolist()] for it in test]
        return extra, {"inputs": [it["smiles"] for it in test], "targets": ys}

    def card_fields(self, rows: list[dict], targets: list) -> dict:
        """The card's domain numbers over the test split's rows."""
        sims = np.array([r["train_similarity"] for r in rows])
        flagged = sims < self.threshold
        out = {"threshold": self.threshold, "test_out_of_domain": int(flagged.sum()), "test_count": len(rows),
               "test_similarity_median": float(np.median(sims))}
        if self.geometry:  # test molecules predicted from their 2-D graph alone (no 3-D conformer)
            out["test_without_conformer"] = sum(not r["conformer"] for r in rows)
        if self.classes is None and 0 < flagged.sum() < len(flagged):
            err = np.array([[r[t] for t in self.extra["targets"]] for r in rows]) - np.array(targets)
            out |= {"rmse_in_domain": float(np.sqrt(np.mean(err[~flagged] ** 2))),
                    "rmse_out_of_domain": float(np.sqrt(np.mean(err[flagged] ** 2)))}
        return {"domain": out}


__all__ = ["DOMAIN_THRESHOLD", "MoleculePredictor"]
