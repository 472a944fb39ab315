"""Time series: a folder of CSV files (one multichannel series each) and their labels, read
into (T, C) tensors (``reading.py``), padded into batches (``collate.py``), and encoded as one
vector per time step (``encoder.py``)."""

from vecset.encoders.timeseries.collate import collate_series
from vecset.encoders.timeseries.encoder import TimeSeriesEncoder
from vecset.encoders.timeseries.reading import (
           LabelRow,
           class_names_of,
           read_header,
           read_labels,
           read_series,
)

__all__ = ["LabelRow", "TimeSeriesEncoder", "class_names_of", "collate_series", "read_header", "read_labels",
           "read_series"]
