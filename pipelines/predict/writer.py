"""PredictionWriter: the callback that writes ``vecset predict``'s output (the CLI adds it to predict).

Before predict it finds the task being predicted (a multi-task model's: the data's
``predict_task``), asks that task's model what the predict side needs (its receptive field,
whether its encoder normalizes per set, its head's segment decoder: declared in the encoder
and head contracts, ``PredictModel``) and asks the data for its output
(``VecsetDataModule.prediction_output``: a job's own files, e.g. speech's .frames/.phn read in
chunks, or the generic CSV rows). Then every batch's predictions go to that output, and at the
end it writes what is left and prints the path.
"""

from __future__ import annotations

from pathlib import Path

from pytorch_lightning.callbacks import BasePredictionWriter

from vecset.contracts.abilities import Decoder
from vecset.encoders.contract import Encoder
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.multitask import MultiTaskDataModule
from vecset.pipelines.predict.output import PredictionOutput, PredictModel
from vecset.pipelines.predict.rows import Rows
from vecset.pipelines.training.multitask import MultiTaskModule
from vecset.pipelines.training.receptive_field import receptive_field


def predicted_task(datamodule, model):
    """The data module and the model (``encoder``, ``backbone``, ``head``) of the task being
    predicted: the model and its data, or a multi-task model's ``predict_task`` (its view)."""
    if isinstance(model, MultiTaskModule):
        if not isinstance(datamodule, MultiTaskDataModule):
            raise ValueError(f"MultiTaskModule predicts through a MultiTaskDataModule naming the task "
                             f"(predict_task, one of {model.tasks}), got {type(datamodule).__name__}")
        task = datamodule.predict_task_name()
        return datamodule.tasks[task], model.task_view(task)
    return datamodule, model


def predict_model(model) -> PredictModel:
    """What ``model`` (a task's ``encoder``, ``backbone``, ``head``) declares for the predict side."""
    return PredictModel(receptive_field=receptive_field(model.encoder, model.backbone, model.head),
                        normalizes_per_set=isinstance(model.encoder, Encoder) and model.encoder.normalizes_per_set,
                        segment_decoder=model.head.segment_decoder() if isinstance(model.head, Decoder) else None)


def prediction_output(data, model, out_dir: Path) -> PredictionOutput:
    """The writer of one task's predictions: the one its data module declares (a job's own
    files), or the generic CSV rows."""
    made = data.prediction_output(out_dir, predict_model(model)) if isinstance(data, VecsetDataModule) else None
    return Rows(data, out_dir) if made is None else made


class PredictionWriter(BasePredictionWriter):
    """Writes ``vecset predict`` output through ``prediction_output``, batch by batch.

    A streaming output (speech) writes each batch as it comes and Lightning keeps no copy of
    the predictions (``return_predictions`` off), so memory does not grow with the input:
    hours of audio in chunks. The others write their rows at the end."""

    def __init__(self) -> None:
        super().__init__(write_interval="batch")
        self.output: PredictionOutput | None = None

    def setup(self, trainer, pl_module, stage: str) -> None:
        # after the data's setup (its inputs are known), before the loaders are asked for
        super().setup(trainer, pl_module, stage)
        if stage != "predict" or trainer.datamodule is None:
            return
        data, model = predicted_task(trainer.datamodule, pl_module)
        self.output = prediction_output(data, model, Path(trainer.log_dir))

    def on_predict_start(self, trainer, pl_module) -> None:
        if self.output is not None and self.output.streams:
            trainer.predict_loop.return_predictions = False

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx,
                           dataloader_idx) -> None:
        if self.output is None:
            raise RuntimeError("PredictionWriter: predict ran without a data module (trainer.predict(model, "
                               "datamodule=...) is how vecset's data says what its inputs are)")
        self.output.add(prediction["ids"], {k: v for k, v in prediction.items() if k != "ids"}, batch)

    def on_predict_epoch_end(self, trainer, pl_module) -> None:
        if self.output is None:
            return
        path = self.output.close()
        self.output = None
        if trainer.is_global_zero:
            print(f"predictions: {path}")
