"""Text: reading (CoNLL-U, CMUdict), batching, TextEncoder. The UTF-8 readers live in
``encoders/files.py`` (molecule CSVs use them too) and stay importable from here."""

from vecset.encoders.files import read_utf8, read_utf8_lines
from vecset.encoders.text.cmudict import read_dict_file, read_word_file, strip_stress
from vecset.encoders.text.collate import collate_text, collate_tokens
from vecset.encoders.text.conllu import UPOS, read_conllu
from vecset.encoders.text.encoder import TextEncoder

__all__ = ["UPOS", "TextEncoder", "collate_text", "collate_tokens", "read_conllu", "read_dict_file", "read_utf8",
           "read_utf8_lines", "read_word_file", "strip_stress"]
