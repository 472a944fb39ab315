"""Kernel regression on 1-D toy data: the data module and the report of its fits."""
