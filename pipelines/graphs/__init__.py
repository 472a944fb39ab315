"""Graph node classification: the data module (networkx graphs)."""
