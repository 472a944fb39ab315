"""Data modules: find, split, featurize (through the encoder packages) and batch."""
