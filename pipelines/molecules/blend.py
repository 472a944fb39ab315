"""A molecule predictor blended with a descriptor model: ``vecset pack RUN_DIR OUT_DIR --blend hgb``.

The attention model and a scikit-learn model on the same RDKit descriptors (the raw ones the data
module computes for the head, NaN kept: each peer handles it) make different errors; their
weighted mean ``w * attention + (1 - w) * peer`` (regression values, or class probabilities) is
the blend. The peer's setting is the grid point with the best validation metric, fit on the
training split; ``w`` (0 to 1 in steps of 0.05) is then chosen on the same validation molecules.
Nothing of the test split is read.

    svr     SVR with an RBF kernel on the training split's varying descriptors, standardized as the
            head's are (``DescriptorScaler``), the target standardized too; C x gamma (multiples
            of 1/F) x epsilon (in target standard deviations). Regression only (an SVC gives no
            probabilities to blend)
    hgb     scikit-learn's HistGradientBoosting, 300 iterations; learning rate x leaf count x l2
    forest  RandomForest, 500 trees; max_features

``bench/molecule_peers.py`` tunes the same grids as the peers a chemist would try first.

The fitted peer is written with skops (``peer.skops`` beside ``model.pt``) and read back with
only its own scikit-learn types trusted: a file holding anything else is refused, as
``model.pt`` is read with ``weights_only``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

PEER_FILE = "peer.skops"
GRIDS: dict[str, dict[str, list]] = {
    "svr": {"C": [0.3, 1.0, 10.0, 100.0, 1000.0], "gamma_x": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
            "epsilon": [0.01, 0.1, 0.3, 0.6]},
    "hgb": {"learning_rate": [0.03, 0.1, 0.3], "max_leaf_nodes": [15, 31, 63], "l2_regularization": [0.0, 1.0, 10.0]},
    "forest": {"max_features": [1.0, 0.33, "sqrt"]},
}
WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))  # the attention model's weight
# what a peer file may hold beyond skops' default-trusted types: the trees of GRIDS' peers and
# the SVR's input step (this module's DescriptorZ, holding a DescriptorScaler)
TRUSTED_PREFIXES = ("sklearn.ensemble.", "sklearn.tree.", "vecset.pipelines.molecules.blend.DescriptorZ",
                    "vecset.encoders.graph.descriptors.DescriptorScaler")


def grid_points(grid: dict[str, list]) -> list[dict]:
    """Every combination of a grid's values, in order."""
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def pick(scored: list[tuple[Any, float]], lower_is_better: bool) -> tuple[Any, float]:
    """The (choice, validation metric) with the best metric; the first of ties."""
    best = scored[0]
    for point in scored[1:]:
        if (point[1] < best[1]) if lower_is_better else (point[1] > best[1]):
            best = point
    return best


def metric(classification: bool, truth: np.ndarray, pred: np.ndarray) -> float:
    """RMSE; classification: ROC-AUC of the second class's probability (two classes), else the
    accuracy of the most probable class (``pred``: (n, classes))."""
    if not classification:
        return float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(truth)) ** 2)))
    pred = np.asarray(pred)
    if pred.shape[1] == 2 and 0 < truth.sum() < len(truth):
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(truth, pred[:, 1]))
    return float(np.mean(pred.argmax(1) == truth))


def descriptor_matrix(items: list[dict]) -> np.ndarray:
    """The items' raw RDKit descriptors (n, F): NaN kept, infinities clipped into float32's range
    (the trees bin in float32)."""
    return np.clip(np.stack([it["raw_desc"] for it in items]).astype(np.float64), -1e30, 1e30)


def non_constant(train: np.ndarray) -> np.ndarray:
    """The columns of the (n, F) training descriptors that vary (NaN ignored; all-NaN: constant)."""
    with np.errstate(all="ignore"):
        lo = np.nanmin(np.where(np.isnan(train), np.inf, train), 0)
        hi = np.nanmax(np.where(np.isnan(train), -np.inf, train), 0)
    return np.flatnonzero(np.isfinite(lo) & (hi > lo))


class DescriptorZ(TransformerMixin, BaseEstimator):
    """The SVR's input: the training split's varying descriptors (``non_constant``), standardized
    as the head's are (``DescriptorScaler``: NaN -> the mean, z-scores clipped at +-5), float32."""

    def fit(self, x: np.ndarray, y: Any = None) -> DescriptorZ:
        from vecset.encoders.graph.descriptors import DescriptorScaler

        self.keep_ = non_constant(x)
        self.scaler_ = DescriptorScaler().fit(x[:, self.keep_])
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        return self.scaler_.transform(x[:, self.keep_]).numpy()


def make_peer(peer: str, point: dict, classification: bool, features: int | None = None) -> Any:
    """The unfitted scikit-learn estimator of one grid point (``features``: the SVR's varying
    descriptors, F of gamma's 1/F)."""
    if peer == "svr":
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVR

        if classification:
            raise ValueError("the svr peer blends regression only (an SVC gives no class probabilities)")
        svr = SVR(C=point["C"], gamma=point["gamma_x"] / features, epsilon=point["epsilon"])
        return Pipeline([("z", DescriptorZ()), ("svr", TransformedTargetRegressor(svr, transformer=StandardScaler(), check_inverse=False))])
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )

    if peer == "hgb":
        kind = HistGradientBoostingClassifier if classification else HistGradientBoostingRegressor
        return kind(max_iter=300, early_stopping=False, random_state=0, **point)
    if peer == "forest":
        kind = RandomForestClassifier if classification else RandomForestRegressor
        return kind(500, random_state=0, n_jobs=1, **point)
    raise ValueError(f"no such peer {peer!r}: one of {sorted(GRIDS)}")


def peer_output(model: Any, x: np.ndarray, classification: bool) -> np.ndarray:
    """The peer's values (n,), or its class probabilities (n, classes)."""
    return model.predict_proba(x) if classification else model.predict(x)


def fit_peer(peer: str, x_train: np.ndarray, y_train: np.ndarray, x_val: np.ndarray, y_val: np.ndarray,
             classification: bool) -> tuple[Any, dict, list[dict]]:
    """Every grid point fit on the training split and scored on validation: the best one's
    fitted model, its setting and validation metric, and the grid's metrics."""
    scored, models = [], []
    features = len(non_constant(x_train))
    for point in grid_points(GRIDS[peer]):
        model = make_peer(peer, point, classification, features).fit(x_train, y_train)
        scored.append((point, metric(classification, y_val, peer_output(model, x_val, classification))))
        models.append(model)
    point, val = pick(scored, lower_is_better=not classification)
    i = [p for p, _ in scored].index(point)
    return models[i], {"setting": point, "val": val}, [{**p, "val": v} for p, v in scored]


def mix(w: float, attention: np.ndarray, peer: np.ndarray) -> np.ndarray:
    return w * attention + (1.0 - w) * peer


def choose_weight(attention_val: np.ndarray, peer_val: np.ndarray, y_val: np.ndarray,
                  classification: bool) -> tuple[float, float]:
    """The attention model's weight with the best validation metric of the blend, and that metric
    (of tied weights, the smallest)."""
    scored = [(w, metric(classification, y_val, mix(w, attention_val, peer_val))) for w in WEIGHTS]
    return pick(scored, lower_is_better=not classification)


def save_peer(model: Any, folder: Path) -> Path:
    import skops.io as sio

    path = Path(folder) / PEER_FILE
    sio.dump(model, path)
    return path


def load_peer(path: Path) -> Any:
    """A peer file, its types checked first: scikit-learn's ensembles and their parts only."""
    import skops.io as sio

    from vecset.pipelines.predictor import PredictorError

    if not Path(path).is_file():
        raise PredictorError(f"{path}: no such file (the card names a blend with a descriptor model, which "
                             f"`vecset pack --blend` writes there)")
    types = sio.get_untrusted_types(file=path)
    refused = [t for t in types if not t.startswith(TRUSTED_PREFIXES)]
    if refused:
        raise PredictorError(f"{path}: holds types other than scikit-learn's ensembles ({', '.join(refused[:3])}); "
                             "not loaded")
    return sio.load(path, trusted=types)


def attention_output(predictor: Any, smiles: list[str]) -> np.ndarray:
    """The predictor's values (n,) or class probabilities (n, classes) for molecules that must
    all be predicted (the data module's own)."""
    rows = predictor.predict(smiles)
    bad = [r for r in rows if r["error"]]
    if bad:
        raise ValueError(f"{len(bad)} of {len(rows)} validation molecules could not be predicted "
                         f"(first: {bad[0]['input']!r}: {bad[0]['error']})")
    if predictor.classes is not None:
        return np.array([[r[f"P({c})"] for c in predictor.classes] for r in rows])
    return np.array([r[predictor.extra["targets"][0]] for r in rows])


def fit_blend(predictor: Any, config: dict, peer: str) -> tuple[dict, Any]:
    """The run's data module (``config``'s) again: ``peer`` tuned on its training and validation
    splits, then the blend's weight on validation. The blend's record (for the card and
    ``model.pt``) and the fitted peer."""
    from vecset.pipelines.molecules.data import MoleculeDataModule
    from vecset.pipelines.predictor import PredictorError

    if peer not in GRIDS:
        raise PredictorError(f"--blend {peer!r}: one of {sorted(GRIDS)}")
    if peer == "svr" and predictor.classes is not None:
        raise PredictorError("--blend svr: regression only (an SVC gives no class probabilities); "
                             "a classifier blends with hgb or forest")
    if not predictor.extra["descriptors"]:
        raise PredictorError("--blend: the run was trained without descriptors (data.features.descriptors: "
                             "false), which the descriptor model reads")
    classification = predictor.classes is not None
    if not classification and len(predictor.extra["targets"]) != 1:
        raise PredictorError(f"--blend: the run predicts {len(predictor.extra['targets'])} targets; a blend "
                             "takes one")
    dm = MoleculeDataModule(**dict(config["data"].get("init_args") or {}))
    dm.setup("fit")
    train, val = dm.splits["train"], dm.splits["val"]
    if not val:
        raise PredictorError("--blend: the run has no validation split to choose the blend on")

    def targets(items: list[dict]) -> np.ndarray:
        return np.array([int(it["y"]) if classification else float(it["y"][0]) for it in items])

    y_val = targets(val)
    model, chosen, grid = fit_peer(peer, descriptor_matrix(train), targets(train), descriptor_matrix(val), y_val,
                                   classification)
    attention = attention_output(predictor, [it["smiles"] for it in val])
    weight, blended = choose_weight(attention, peer_output(model, descriptor_matrix(val), classification), y_val,
                                    classification)
    name = "rmse" if not classification else ("roc_auc" if attention.shape[1] == 2 else "accuracy")
    info = {"peer": peer, "setting": chosen["setting"], "weight": weight,
            "validation": {"metric": name, "attention": metric(classification, y_val, attention),
                           "peer": chosen["val"], "blend": blended},
            "grid": grid, "molecules": {"train": len(train), "val": len(val)}}
    return info, model


__all__ = ["DescriptorZ", "attention_output", "fit_blend", "GRIDS", "PEER_FILE", "WEIGHTS", "choose_weight", "descriptor_matrix", "fit_peer", "load_peer",
           "make_peer", "metric", "mix", "non_constant", "peer_output", "save_peer"]
