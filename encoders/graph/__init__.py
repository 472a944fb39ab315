"""Graphs as sets of node vectors: SMILES -> networkx graph -> node features + pairwise bias.

- Atoms/bonds as a graph, atom features as in Chemprop (Yang et al. 2019, "Analyzing Learned
  Molecular Representations for Property Prediction"): element, degree, formal charge,
  hybridization, hydrogen count, aromaticity, ring membership; bond type, conjugation, ring.
- Structure into attention, two modes:
  ``neighbours``: a node attends only to its bonded neighbours and itself (a bool
  ``VectorSet.bias``; Velickovic et al. 2018, GAT);
  ``all_pairs``: every node attends to every node with a learned per-head bias per
  shortest-path distance and per bond type of directly bonded pairs, plus a degree
  (centrality) embedding added to the node vectors (Ying et al. 2021, "Do Transformers
  Really Perform Bad for Graph Representation?", Graphormer).
- Optional Laplacian-eigenvector positional encoding with random sign flips during training
  (Dwivedi & Bresson 2020, "A Generalization of Transformer Networks to Graphs").
- Optional molecule-level RDKit 2-D descriptors for ``SequenceHead(extra_features=...)``
  (Chemprop's ``rdkit_2d`` feature generator).

All the chemistry is here: ``reading.py`` is the molecule reader (a SMILES -> ``Molecule``
through ``MoleculeFeaturizer``; a CSV of SMILES with targets or labels -> labelled batch items,
``read_molecule_csv``), ``cache.py`` keeps featurized molecules on disk for the next run,
``descriptors.py`` computes and standardizes descriptors, ``scaffolds.py`` groups molecules by
Bemis-Murcko scaffold for splits, ``identity.py`` names a molecule by its canonical SMILES (for
overlap checks between splits and sets). Featurization (``graph_tensors``) is plain numpy/torch and
runs once per dataset in a DataModule's ``setup``; the encoder only embeds the cached tensors
and checks, at the hand-over, that its tables fit how they were made (``GraphStructure``)."""

from vecset.encoders.graph.cache import FeatureCache, default_cache_dir
from vecset.encoders.graph.collate import pad_graphs
from vecset.encoders.graph.descriptors import (
    DESCRIPTOR_NAMES,
    DescriptorScaler,
    molecule_descriptors,
)
from vecset.encoders.graph.encoder import GraphAttention, GraphEncoder
from vecset.encoders.graph.featurize import (
    ATOM_CATEGORICAL,
    ATOM_FEATURE_WIDTH,
    ATOM_NUMERIC,
    BOND_EDGE_TYPES,
    BOND_TYPES,
    NodeFeaturizer,
    atom_feature_width,
    graph_tensors,
    laplacian_pe,
)
from vecset.encoders.graph.identity import canonical_smiles
from vecset.encoders.graph.molecules import (
    InvalidMolecule,
    Molecule,
    mol_to_graph,
    parse_smiles,
    smiles_to_graph,
)
from vecset.encoders.graph.reading import (
    MoleculeFeaturizer,
    MoleculeTable,
    featurize_smiles,
    read_molecule_csv,
)
from vecset.encoders.graph.scaffolds import murcko_scaffold, scaffold_groups
from vecset.encoders.graph.structure import GraphStructure

__all__ = [
    "GraphStructure","ATOM_CATEGORICAL", "ATOM_FEATURE_WIDTH", "ATOM_NUMERIC", "BOND_EDGE_TYPES", "BOND_TYPES",
           "DESCRIPTOR_NAMES", "DescriptorScaler", "FeatureCache", "GraphAttention",
           "GraphEncoder", "InvalidMolecule", "atom_feature_width", "Molecule", "MoleculeFeaturizer", "MoleculeTable", "NodeFeaturizer",
           "canonical_smiles", "default_cache_dir", "featurize_smiles", "graph_tensors",
           "laplacian_pe", "mol_to_graph", "molecule_descriptors", "murcko_scaffold", "pad_graphs", "parse_smiles",
           "read_molecule_csv", "scaffold_groups", "smiles_to_graph"]
