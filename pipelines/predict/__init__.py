"""``vecset predict``: the writer callback, one output per kind of prediction file, and the
chunked reading of long speech recordings."""

from vecset.pipelines.predict.chunks import (
    Chunk,
    ChunkBatches,
    SpeechChunks,
    chunk_loader,
    collate_chunks,
    plan_chunks,
)
from vecset.pipelines.predict.output import PredictionOutput
from vecset.pipelines.predict.rows import MoleculeRows, NodeRows, PronunciationRows, Rows
from vecset.pipelines.predict.speech_files import SpeechOutput, SpeechPredictionFiles
from vecset.pipelines.predict.writer import PredictionWriter, predicted_task, prediction_output

__all__ = [
    "Chunk", "ChunkBatches", "MoleculeRows", "NodeRows", "PredictionOutput", "PredictionWriter",
    "PronunciationRows", "Rows", "SpeechChunks", "SpeechOutput", "SpeechPredictionFiles", "chunk_loader",
    "collate_chunks", "plan_chunks", "predicted_task", "prediction_output",
]
