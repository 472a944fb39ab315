"""Old module paths of the files that moved into the job folders, kept importable.

Configs, checkpoints (their saved config and pickled hyperparameters) and users' code name
classes by module path, e.g. ``vecset.pipelines.reports.speech.PerPhoneReport``. Each old path
here imports as the module that now holds the code (the same module object, so a patch through
either name reaches the one code: ``contracts/moved.py``). ``pipelines/__init__.py`` installs it.
"""

from __future__ import annotations

from vecset.contracts import moved

# old module path -> the module that holds it now
MOVED = {
    "vecset.pipelines.data.speech": "vecset.pipelines.speech.data",
    "vecset.pipelines.data.speech_checks": "vecset.pipelines.speech.checks",
    "vecset.pipelines.data.speech_utterances": "vecset.pipelines.speech.utterances",
    "vecset.pipelines.predict.speech_files": "vecset.pipelines.speech.prediction_files",
    "vecset.pipelines.predict.chunks": "vecset.pipelines.speech.chunks",
    "vecset.pipelines.reports.speech": "vecset.pipelines.speech.reports",
    "vecset.pipelines.reports.segment_scores": "vecset.pipelines.speech.segment_scores",
    "vecset.pipelines.reports.word_scores": "vecset.pipelines.speech.word_scores",
    "vecset.pipelines.data.molecules": "vecset.pipelines.molecules.data",
    "vecset.pipelines.data.molecule_pretrain": "vecset.pipelines.molecules.pretrain",
    "vecset.pipelines.reports.molecules": "vecset.pipelines.molecules.reports",
    "vecset.pipelines.data.images": "vecset.pipelines.images.data",
    "vecset.pipelines.data.fashion_mnist": "vecset.pipelines.images.fashion_mnist",
    "vecset.pipelines.reports.images": "vecset.pipelines.images.reports",
    "vecset.pipelines.reports.mistakes": "vecset.pipelines.images.mistakes",
    "vecset.pipelines.data.cmudict": "vecset.pipelines.text.cmudict",
    "vecset.pipelines.data.conllu": "vecset.pipelines.text.conllu",
    "vecset.pipelines.reports.seq2seq": "vecset.pipelines.text.alignment",
    "vecset.pipelines.data.graphs": "vecset.pipelines.graphs.data",
    "vecset.pipelines.data.kernel_regression": "vecset.pipelines.kernel_regression.data",
    "vecset.pipelines.reports.kernel_regression": "vecset.pipelines.kernel_regression.reports",
}


def install() -> None:
    """Put the finder for these paths on ``sys.meta_path`` once."""
    moved.install(MOVED)
