"""What a speech corpus's splits share: sentences (a model can memorise a sentence's words) and
speakers (a speaker-dependent score). Warnings, with counts; nothing is left out of a split.

The sentences are the utterances' ``.txt`` transcripts compared after ``normalise_sentence``
(without case, punctuation and extra whitespace), the speakers their folders (TIMIT layout).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from vecset.encoders.speech import Utterance, read_sentences

log = logging.getLogger(__name__)


def shared_sentences(root: Path, files_of: Callable[[str], list[Path]], same_val_test: bool) -> dict[str, int]:
    """Warn when a validation or test utterance says a sentence that a training utterance says
    too: such a score is not one on new sentences. ``files_of(split)``: a split's audio files
    (``train``, ``val``, ``test``; listed only when the training split has transcripts);
    ``same_val_test``: val is the test split (said once, for test). Returns, per split, the
    number of its utterances that share a training sentence."""
    train = read_sentences(files_of("train"))
    if not train:
        log.info("speech: no .txt transcripts beside the training utterances: no check for shared sentences")
        return {}
    shared = {}
    for split in ("val", "test"):
        sentences = {} if split == "val" and same_val_test else read_sentences(files_of(split))
        common = sorted(set(sentences) & set(train))
        shared[split] = sum(len(sentences[t]) for t in common)
        if common:
            total = sum(len(v) for v in sentences.values())
            examples = "; ".join(f"{sentences[t][0].relative_to(root)} and {train[t][0].relative_to(root)}: "
                                 f"{t[:60]!r}" for t in common[:3])
            log.warning("speech: %d of the %d %s utterances with a .txt (%d distinct sentences) say a sentence "
                        "that a training utterance says too (compared without case, punctuation and extra "
                        "whitespace): the %s score is partly one on memorised sentences; e.g. %s",
                        shared[split], total, split, len(common), split, examples)
    return shared


def speakers(utterances: list[Utterance]) -> set[str]:
    """The speakers of utterances in TIMIT layout: their folders' names."""
    return {u.path.parent.name for u in utterances}


def check_shared_speakers(train: list[Utterance], test: list[Utterance]) -> set[str]:
    """Warn when training and test share speakers (the split is not speaker-disjoint); the shared ones."""
    shared = speakers(train) & speakers(test)
    if shared:
        log.warning("speech: train and test share speakers %s (the split is not speaker-disjoint)", sorted(shared))
    return shared
