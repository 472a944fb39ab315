"""Speech frame labeling: the data module (TIMIT-style folders), its checks and utterances,
the prediction files (.frames/.phn), chunked reading of long recordings, the reports."""
