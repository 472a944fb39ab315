"""Molecule property prediction: the data module (CSV of SMILES), the pretraining data, the reports."""
