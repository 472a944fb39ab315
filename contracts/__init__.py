"""The contracts every package reads: VectorSet (what encoders make, the backbone maps and
heads read), DataSpec (what a model needs from its data, handed over once) and the optional
abilities a model part declares. Below backbone/, encoders/, heads/ and pipelines/; imports torch only."""

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet

__all__ = ["DataSpec", "VectorSet"]
