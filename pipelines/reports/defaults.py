"""The reports each job gets when its config lists none: the ones its data module declares.

A config overrides them by listing the reports on the ``ReportWriter`` callback (see
``callback.py``); these are what ``ReportWriter()`` with no ``reports`` writes. A job's data
module declares its own (``VecsetDataModule.default_reports``, e.g. speech's per-phone report,
segments and frame attention, in ``pipelines/speech/data.py``); one that declares none gets the
generic ones here, and a data module that is not a ``VecsetDataModule`` none:

- the per-class report (with ``class_names``) or the parity report (with ``target_names``).
"""

from __future__ import annotations

from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.reports.base import Report
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.regression import ParityReport


def scored(data) -> list[Report]:
    """The per-class report of a task with ``class_names``, the parity report of one with
    ``target_names`` (regression), none otherwise."""
    if data.class_names:
        return [ClassificationReport()]
    if data.target_names:
        return [ParityReport()]
    return []


def default_reports(data) -> list[Report]:
    """The reports of ``data``'s job: the ones it declares, else the generic ones (``scored``);
    none for a data module outside vecset's."""
    if not isinstance(data, VecsetDataModule):
        return []
    made = data.default_reports()
    return scored(data) if made is None else list(made)
