"""``vecset predict``: the writer callback and the prediction outputs' contract (a job's own
output lives in its folder: ``pipelines/speech/prediction_files.py``)."""

from vecset.pipelines.predict.output import PredictionOutput, PredictModel
from vecset.pipelines.predict.rows import Rows
from vecset.pipelines.predict.writer import PredictionWriter, predicted_task, prediction_output

__all__ = [
    "PredictModel", "PredictionOutput", "PredictionWriter", "Rows", "predicted_task", "prediction_output",
]
