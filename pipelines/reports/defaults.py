"""The reports each job gets when its config lists none: by the data module's class.

A config overrides them by listing the reports on the ``ReportWriter`` callback (see
``callback.py``); these are what ``ReportWriter()`` with no ``reports`` writes. The table is keyed
by the data module's class path and looked up along its class hierarchy, so a subclass of an
image data module gets the image reports, and a data module of one's own the base entry.

- any ``VecsetDataModule``: the per-class report (with ``class_names``) or the parity report
  (with ``target_names``), else none;
- ``ImageDataModule`` (digits, image folders, CIFAR-10, Fashion-MNIST): the per-class report,
  attention maps of 8 test images, the 16 most confident mistakes;
- ``SpeechFramesDataModule``: the per-phone report, the segments of 3 test utterances, one
  block's attention over the frames;
- ``CMUDictDataModule``: alignment heatmaps of 4 test words;
- ``CoNLLUDataModule``, ``GraphNodeDataModule``: the per-class report, one block's attention
  between the vectors;
- ``MoleculeDataModule``: parity and uncertainty (regression) or per-class (and ROC/PR for two
  classes), then the atoms' pooling attention;
- ``KernelRegressionDataModule``: the kernel's fits, attention and RMSEs;
- ``MoleculePretrainDataModule``: none (its validation metrics are the pretext's report).
"""

from __future__ import annotations

from collections.abc import Callable

from vecset.pipelines.images.mistakes import MistakesReport
from vecset.pipelines.images.reports import AttentionMapsReport
from vecset.pipelines.kernel_regression.reports import KernelRegressionReport
from vecset.pipelines.molecules.reports import PoolingAttentionReport
from vecset.pipelines.reports.base import Report
from vecset.pipelines.reports.binary import BinaryReport
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.regression import ParityReport
from vecset.pipelines.reports.uncertainty import UncertaintyReport
from vecset.pipelines.reports.vector_attention import VectorAttentionReport
from vecset.pipelines.speech.reports import FrameAttentionReport, PerPhoneReport, SegmentsReport
from vecset.pipelines.text.alignment import AlignmentReport


def scored(data) -> list[Report]:
    """The per-class report of a task with ``class_names``, the parity report of one with
    ``target_names`` (regression), none otherwise."""
    if data.class_names:
        return [ClassificationReport()]
    if data.target_names:
        return [ParityReport()]
    return []


def molecules(data) -> list[Report]:
    if data.class_names is None:
        extra: list[Report] = [UncertaintyReport()]
    else:
        extra = [BinaryReport()] if len(data.class_names) == 2 else []
    return [*scored(data), *extra, PoolingAttentionReport()]


P = "vecset.pipelines"
DEFAULTS: dict[str, Callable[[object], list[Report]]] = {
    f"{P}.data.base.VecsetDataModule": scored,
    f"{P}.images.data.ImageDataModule": lambda d: [*scored(d), AttentionMapsReport(), MistakesReport()],
    f"{P}.speech.data.SpeechFramesDataModule": lambda d: [PerPhoneReport(), SegmentsReport(), FrameAttentionReport()],
    f"{P}.text.cmudict.CMUDictDataModule": lambda d: [AlignmentReport()],
    f"{P}.text.conllu.CoNLLUDataModule": lambda d: [*scored(d), VectorAttentionReport()],
    f"{P}.graphs.data.GraphNodeDataModule": lambda d: [*scored(d), VectorAttentionReport()],
    f"{P}.molecules.data.MoleculeDataModule": molecules,
    f"{P}.kernel_regression.data.KernelRegressionDataModule": lambda d: [KernelRegressionReport()],
    # the pretext metrics (val atom_acc, desc_rmse) are the report; the downstream sets judge it
    f"{P}.molecules.pretrain.MoleculePretrainDataModule": lambda d: [],
}


def class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def default_reports(data) -> list[Report]:
    """The reports of ``data``'s job: the entry of its class or the nearest base class in
    ``DEFAULTS``; none for a data module outside vecset's."""
    for cls in type(data).__mro__:
        make = DEFAULTS.get(class_path(cls))
        if make is not None:
            return make(data)
    return []
