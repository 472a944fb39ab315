"""Training: TaskModule, MultiTaskModule, checkpoints and callbacks."""
