"""A job's data module declares what the generic layers need from it (its prediction output,
its default reports, the values it links into the model); predict/, reports/ and the config
links ask it and name no job."""

from __future__ import annotations

import torch
import yaml

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import LabelingHead
from vecset.pipelines.config_links import data_classes, single_task_links
from vecset.pipelines.data.base import ModelLink
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.predict.output import PredictionOutput, PredictModel
from vecset.pipelines.predict.rows import Rows
from vecset.pipelines.predict.writer import predict_model, prediction_output
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.training.task import TaskModule


class Kept(PredictionOutput):
    def __init__(self, out_dir, model: PredictModel) -> None:
        self.out_dir, self.model = out_dir, model

    def add(self, ids, preds, batch) -> None:
        pass

    def close(self):
        return self.out_dir


class OwnJob(SyntheticSetDataModule):
    """A job of one's own: its output, no reports, a width its encoder takes."""

    def prediction_output(self, out_dir, model):
        return Kept(out_dir, model)

    def default_reports(self) -> list:
        return []

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        return [ModelLink("feature count", ("min_len",), "encoder", "in_dim", lambda n: (n + 1, "min_len", str(n)))]


def model() -> TaskModule:
    return TaskModule(VectorEncoder(1, 8), Backbone(8, depth=1, heads=2), LabelingHead(8, 2))


def test_the_writer_takes_the_output_the_data_declares(tmp_path):
    out = prediction_output(OwnJob(), model(), tmp_path)
    assert isinstance(out, Kept) and out.model == PredictModel(receptive_field=None, normalizes_per_set=False,
                                                               segment_decoder=None)
    assert type(prediction_output(SyntheticSetDataModule(), model(), tmp_path)) is Rows  # declared none: the rows


def test_predict_model_reads_the_declared_abilities():
    torch.manual_seed(0)
    assert predict_model(model()).receptive_field is None  # full attention: every vector


def test_the_reports_are_the_ones_the_data_declares():
    assert default_reports(OwnJob()) == []
    assert [type(r) for r in default_reports(SyntheticSetDataModule())] == [ClassificationReport]


def test_the_links_are_the_ones_the_data_class_declares(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"data": {"class_path": f"{__name__}.OwnJob"}}))
    classes = data_classes(["--config", str(cfg)])
    assert classes == {"": OwnJob}
    (link,) = [lk for lk in single_task_links(classes[""]) if lk.what == "feature count"]
    assert (link.sources, link.target) == (("data.init_args.min_len",), "model.init_args.encoder.init_args.in_dim")
    assert link.compute(4) == (5, "data.init_args.min_len", "4")
    assert data_classes(["--data", "SyntheticSetDataModule"]) == {"": SyntheticSetDataModule}


def test_a_link_whose_source_cannot_be_read_is_one_error_naming_the_sources(tmp_path):
    """A data's link may read its files (a folder's header gives the channel count): a file that
    is not there is reported as a conflict is, one line naming the data's keys and the file."""
    import pytest

    from vecset.pipelines.config_links import Link, LinkSourceError, checked, link_conflict

    def header_width(root):
        return len((tmp_path / root / "a.csv").read_text().splitlines()[0].split(",")), "root", root

    link = Link("channel count", ("data.init_args.root",), "model.init_args.encoder.init_args.in_dim", header_width)
    apply = checked(link)
    with pytest.raises(LinkSourceError) as e:
        apply("missing", "vecset.encoders.VectorEncoder", None)
    first = str(e.value).splitlines()[0]
    assert first.startswith("data.init_args.root: [Errno 2] No such file or directory") and "missing/a.csv" in first
    assert first.endswith("(read for the channel count, model.init_args.encoder.init_args.in_dim)")
    assert link_conflict(RuntimeError("wrapped")) is None
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.csv").write_text("x,y,z\n1,2,3\n")
    assert apply("ok", "vecset.encoders.VectorEncoder", None) == 3
