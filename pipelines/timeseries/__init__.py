"""Time-series classification: a folder of CSV series and their labels (data.py), the prediction rows."""
