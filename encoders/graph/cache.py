"""FeatureCache: featurized molecules on disk, so that a second run (or an ensemble's next
member) reads them instead of featurizing again.

One file per key: the SHA-256 of the SMILES featurized (in order), the featurizer's settings,
the RDKit version and the source of the featurization code, so any change to one of them misses
the cache (a file whose targets alone changed still hits: the tensors depend on the SMILES only).
Files are written by ``torch.save`` to a temporary name and renamed (a reader never sees half a
file) and read with ``torch.load(weights_only=True)`` (tensors, strings and numbers only: a
cache file cannot run code). An unreadable or mismatched file is a miss, logged, and replaced.

The folder: ``$VECSET_CACHE/molecules``, else ``$XDG_CACHE_HOME/vecset/molecules``, else
``~/.cache/vecset/molecules``; delete it to free the space.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

import torch

from vecset.encoders.graph.molecules import InvalidMolecule, Molecule

log = logging.getLogger(__name__)

FORMAT = 2  # 2: each molecule's canonical SMILES kept with its tensors
# the files whose code decides the featurized tensors: an edit to one of them misses old caches
CODE = ("molecules.py", "featurize.py", "descriptors.py", "reading.py", "geometry.py", "identity.py", "solvation.py",
        "physics.py")


def default_cache_dir() -> Path:
    """``$VECSET_CACHE/molecules``, else ``$XDG_CACHE_HOME/vecset/molecules``, else ``~/.cache/vecset/molecules``."""
    if os.environ.get("VECSET_CACHE"):
        return Path(os.environ["VECSET_CACHE"]) / "molecules"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vecset" / "molecules"


def code_digest() -> str:
    """SHA-256 of the featurization code (``CODE``, in this folder)."""
    h = hashlib.sha256()
    for name in CODE:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()


class FeatureCache:
    """Featurized molecules on disk, keyed by what they depend on (see the module docstring).

    Args:
        directory: where the files go; None: ``default_cache_dir()`` (read when first used).
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self._directory = Path(directory).expanduser() if directory is not None else None

    @property
    def directory(self) -> Path:
        return self._directory if self._directory is not None else default_cache_dir()

    def key(self, smiles: list[str], settings: dict) -> str:
        from rdkit import rdBase

        h = hashlib.sha256()
        meta = {"format": FORMAT, "settings": settings, "rdkit": rdBase.rdkitVersion, "code": code_digest()}
        h.update(json.dumps(meta, sort_keys=True).encode())
        for s in smiles:
            h.update(s.encode() + b"\n")
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pt"

    def load(self, key: str, smiles: list[str]) -> dict | None:
        """SMILES -> ``Molecule`` or ``InvalidMolecule`` from the file of ``key``; None when there
        is none, or it cannot be read or does not hold ``smiles`` (logged)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            data = torch.load(path, weights_only=True)
            if data["format"] != FORMAT or data["key"] != key or data["smiles"] != smiles:
                raise ValueError("it holds other molecules or another format")
        except Exception as e:  # a truncated or foreign file: featurize again and replace it
            log.warning("molecule cache %s not used (%s: %s); featurizing again", path, type(e).__name__, e)
            return None
        out: dict = {}
        for s, canonical, graph, desc, reason in zip(data["smiles"], data["canonical_smiles"], data["graphs"],
                                                     data["descriptors"], data["reasons"], strict=True):
            out[s] = InvalidMolecule(s, reason) if reason is not None else \
                Molecule(s, canonical, graph, None if desc is None else desc.numpy())
        log.info("%d featurized molecules read from the cache %s", len(out), path)
        return out

    def save(self, key: str, molecules: dict, source: str = "") -> Path | None:
        """Write ``molecules`` (SMILES -> ``Molecule`` or ``InvalidMolecule``) as the file of ``key``;
        where, or None when the folder cannot be written (logged: the run goes on uncached)."""
        smiles = list(molecules)
        bad = [molecules[s] if isinstance(molecules[s], InvalidMolecule) else None for s in smiles]
        good = [None if b is not None else molecules[s] for s, b in zip(smiles, bad, strict=True)]
        data = {"format": FORMAT, "key": key, "source": source, "smiles": smiles,
                "reasons": [None if b is None else b.reason for b in bad],
                "canonical_smiles": [None if m is None else m.canonical_smiles for m in good],
                "graphs": [None if m is None else m.graph for m in good],
                "descriptors": [None if m is None or m.descriptors is None else torch.from_numpy(m.descriptors)
                                for m in good]}
        path = self.path(key)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(data, tmp)
            os.replace(tmp, path)
        except OSError as e:  # a read-only or full disk: the molecules are featurized, only not kept
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            log.warning("molecule cache not written to %s (%s: %s); the next run featurizes again", path,
                        type(e).__name__, e)
            return None
        log.info("%d featurized molecules written to the cache %s", len(smiles), path)
        return path
