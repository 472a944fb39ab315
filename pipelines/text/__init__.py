"""Text: grapheme to phoneme (CMUdict), token labeling (CoNLL-U), the alignment report."""
