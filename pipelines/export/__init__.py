"""``vecset export``: a trained model as a ``torch.export`` program (.pt2) and ONNX, with dynamic
batch and set-size axes (``program.py``: what is exported; ``command.py``: the subcommand)."""
