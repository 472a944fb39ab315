"""``vecset predict``: the writer callback and the prediction outputs' contract (a job's own
output lives in its folder: ``pipelines/speech/prediction_files.py``)."""

from vecset.pipelines.predict.output import PredictionOutput
from vecset.pipelines.predict.rows import MoleculeRows, NodeRows, PronunciationRows, Rows
from vecset.pipelines.predict.writer import PredictionWriter, predicted_task, prediction_output

__all__ = [
    "MoleculeRows", "NodeRows", "PredictionOutput", "PredictionWriter", "PronunciationRows", "Rows",
    "predicted_task", "prediction_output",
]
