"""The values a molecule data module's config gives its model (``VecsetDataModule.model_links``;
the CLI links them: ``pipelines/config_links.py``): graph tables, atom widths, 3-D geometry,
descriptor and output counts."""

from __future__ import annotations

from vecset.encoders.graph import (
    ATOM_FEATURE_WIDTH,
    BOND_EDGE_TYPES,
    DESCRIPTOR_NAMES,
    atom_feature_width,
)
from vecset.pipelines.data.base import ModelLink, fixed


def graph_links(group: str = "") -> list[ModelLink]:
    """``max_dist`` and ``lap_pe_k`` of a graph data module (in its option ``group``, e.g.
    ``features.``; "": top-level arguments) -> the ``GraphEncoder``'s."""
    return [ModelLink(f"graph {name}", (group + name,), "encoder", name,
                      lambda v, key=group + name: (v, key, str(v)))
            for name in ("max_dist", "lap_pe_k")]


def atom_width(charges: bool, surface: bool) -> tuple[int, str, str]:
    """The atom feature width: 42, one more with ``charges``, two more with ``surface``."""
    n = atom_feature_width(bool(charges), bool(surface))
    return n, "features.surface" if surface else "features.charges", f"{'true' if surface else 'false'} ({n} atom " \
        f"features with charges {'true' if charges else 'false'}, surface {'true' if surface else 'false'})"


def atom_links(solvation: bool = False) -> list[ModelLink]:
    """The molecule featurizer's atom feature width (42; with ``solvation``, from the data's
    ``features.charges`` and ``features.surface``: ``atom_width``) and bond type count (6), -> the
    ``GraphEncoder``'s ``node_dim`` and ``num_edge_types``."""
    width = (ModelLink("atom feature width", ("features.charges", "features.surface"), "encoder", "node_dim",
                       atom_width)
             if solvation else fixed("atom feature width", "encoder", "node_dim", ATOM_FEATURE_WIDTH,
                                     f"{ATOM_FEATURE_WIDTH} atom features"))
    return [width,
            fixed("bond type count", "encoder", "num_edge_types", BOND_EDGE_TYPES, f"{BOND_EDGE_TYPES} bond types")]


def descriptor_count(descriptors: bool) -> tuple[int, str, str]:
    """The width of ``batch["features"]``: RDKit's 2-D descriptors (``DESCRIPTOR_NAMES``: 217 with
    RDKit 2026.09) or none."""
    n = len(DESCRIPTOR_NAMES) if descriptors else 0
    return n, "features.descriptors", f"true ({n} RDKit 2-D descriptors)" if descriptors else "false"


def output_count(target_columns: list[str] | None, label_column: str | None,
                 classes: list[str] | None) -> tuple[int | None, str, str]:
    """The head's outputs: the classes of ``label_column``, else one per target column (None
    where neither is given: the data module's constructor says what is missing)."""
    if label_column is not None:
        n = len(classes or [])
        return n or None, "classes", f"{classes} ({n} classes)"
    n = len(target_columns or [])
    return n or None, "target_columns", f"{target_columns} ({n} target{'s' if n != 1 else ''})"


def encoder_geometry(geometry: bool) -> tuple[str, str, str]:
    """The data's ``features.geometry`` (a conformer per molecule) -> the ``GraphEncoder``'s
    ``geometry``: its distance bias (``distance_gaussian``) with 3-D distances, ``none`` without."""
    return ("distance_gaussian" if geometry else "none"), "features.geometry", "true" if geometry else "false"


def encoder_physics(physics: bool) -> tuple[bool, str, str]:
    """The data's ``features.physics`` (a physics vector per molecule) -> the ``GraphEncoder``'s
    ``physics_token`` (one more vector of the set, made from it)."""
    return bool(physics), "features.physics", "true" if physics else "false"


def molecule_links() -> list[ModelLink]:
    """A MoleculeDataModule's: the graphs' distance clipping and eigenvector count and the atom
    featurizer's widths and 3-D geometry are the graph encoder's (its tables are sized by them);
    the descriptor count is the head's ``extra_features``, the target columns' or classes' count
    its ``num_outputs``: each given once, at the data."""
    return [*graph_links("features."), *atom_links(solvation=True),
            ModelLink("3-D geometry", ("features.geometry",), "encoder", "geometry", encoder_geometry),
            ModelLink("physics token", ("features.physics",), "encoder", "physics_token", encoder_physics),
            ModelLink("descriptor count", ("features.descriptors",), "head", "extra_features", descriptor_count),
            ModelLink("output count", ("target_columns", "label_column", "classes"), "head", "num_outputs",
                      output_count)]


__all__ = ["atom_links", "atom_width", "descriptor_count", "encoder_geometry", "encoder_physics", "graph_links",
           "molecule_links", "output_count"]
