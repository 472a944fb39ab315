"""Festival's side of the corpus generator: the voices installed, one Scheme script per batch of
utterances run by a ``festival`` process (a batch survives a sentence Festival crashes on), and
its wave, segments and words -> one utterance's files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from corpus_common import (  # noqa: E402
    SR,
    install_or_exit,
    merge_clitics,
    radio_labels,
    resample,
    words_differ,
    write_utterance,
)
from corpus_plan import VOICES, Speaker  # noqa: E402
from speech_text import WORDNET_DIR  # noqa: E402

PACKAGES = ["festival", "festvox-kallpc16k", "festvox-kdlpc16k", "festvox-us-slt-hts", "wordnet-base"]


def check_festival(install: bool) -> None:
    voices = Path("/usr/share/festival/voices")
    missing = [p for p, ok in [
        ("festival", shutil.which("festival") is not None),
        ("festvox-kallpc16k", (voices / "english/kal_diphone").exists()),
        ("festvox-kdlpc16k", (voices / "english/ked_diphone").exists()),
        ("festvox-us-slt-hts", (voices / "us/cmu_us_slt_arctic_hts").exists()),
        ("wordnet-base", (WORDNET_DIR / "data.noun").exists()),
    ] if not ok]
    if missing:
        install_or_exit(PACKAGES, install, f"Festival, its voices or the WordNet text are missing ({', '.join(missing)})")


def scheme_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


SCHEME_HELPERS = """
(define (vs_synth txt stem)
  ;; an error (SIOD ERROR) in one sentence writes <stem>.failed and the batch goes on
  (unwind-protect (vs_synth_1 txt stem)
    (let ((fd (fopen (string-append stem ".failed") "w"))) (fclose fd))))
(define (vs_synth_1 txt stem)
  ;; (Utterance Text txt) does not evaluate txt: build the call with eval
  (set! u (eval (list 'Utterance 'Text txt)))
  (utt.synth u)
  (utt.save.wave u (string-append stem ".wav") 'riff)
  (utt.save.segs u (string-append stem ".segs"))
  (set! fd (fopen (string-append stem ".words") "w"))
  (mapcar (lambda (w)
    (format fd "%s %s %s\\n"
      (item.feat w "R:SylStructure.daughter1.daughter1.segment_start")
      (item.feat w "R:SylStructure.daughtern.daughtern.end")
      (item.name w)))
    (utt.relation.items u 'Word))
  (fclose fd)
  (fclose (fopen (string-append stem ".done") "w")))  ; written last: this utterance is complete
"""


def festival_script(jobs: list[tuple[str, Speaker, str]], tmp: Path) -> str:
    """One Scheme batch: for each speaker group, select the voice, set tempo and F0, synthesize."""
    lines = [SCHEME_HELPERS]
    current = None
    for key, spk, text in jobs:
        if spk.name != current:
            current = spk.name
            fn, diphone = VOICES[spk.voice]
            lines.append(f"({fn})")  # selecting a voice resets its parameters: set them after
            lines.append(f"(Parameter.set 'Duration_Stretch {spk.stretch})")
            if diphone:
                lines.append(f"(set! int_lr_params '((target_f0_mean {spk.f0_mean}) (target_f0_std 14) "
                             f"(model_f0_mean 170) (model_f0_std 34)))")
        lines.append(f"(vs_synth {scheme_str(text)} {scheme_str(str(tmp / key))})")
    return "\n".join(lines) + "\n"


def run_festival(batch: list[tuple[str, Speaker, str]], tmp: Path,
                 advance: Callable[[int], None] | None = None) -> dict[str, str]:
    """Synthesize a batch; returns the utterances Festival could not say, key -> reason.

    A SIOD error in one sentence is caught in Scheme (``<key>.failed``, reason
    ``festival_error``). Festival crashes (a segmentation fault) on some input, e.g. text without
    a single word: the first utterance without audio is then the one it died on (it synthesizes
    in order); it is counted (``festival_crashed``) and the rest of the batch runs again.
    ``advance(n)`` is told of every n utterances finished (said or not), as Festival goes."""
    failed: dict[str, str] = {}
    todo = list(batch)
    reported = 0

    def report() -> None:
        nonlocal reported
        if advance is None:
            return
        finished = sum(k in failed or (tmp / f"{k}.done").exists() or (tmp / f"{k}.failed").exists()
                       for k, _, _ in batch)
        if finished > reported:
            advance(finished - reported)
            reported = finished

    while todo:
        script = tmp / "batch.scm"
        script.write_text(festival_script(todo, tmp))
        proc = subprocess.Popen(["festival", "-b", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        while True:  # the files Festival writes, counted every second while it runs
            try:
                stdout, stderr = proc.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                report()
        res = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        for k, _, _ in todo:
            if (tmp / f"{k}.failed").exists():
                failed[k] = "festival_error"
        missing = [i for i, (k, _, _) in enumerate(todo) if k not in failed and not (tmp / f"{k}.done").exists()]
        if not missing:
            report()
            return failed
        if res.returncode == 0:
            raise RuntimeError(f"Festival exited 0 on {script} but wrote no audio for {len(missing)} utterances "
                               f"(first {todo[missing[0]][0]}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        failed[todo[missing[0]][0]] = "festival_crashed"
        todo = todo[missing[0] + 1:]
    report()
    return failed


# --- post-processing ------------------------------------------------------------------------
def read_segs(path: Path) -> list[tuple[float, str]]:
    """Festival's ``utt.save.segs``: a '#' line, then 'end_time 100 phone' per segment."""
    out = []
    started = False
    for line in path.read_text().splitlines():
        if line.strip() == "#":
            started = True
            continue
        if started and line.strip():
            t, _, ph = line.split()
            out.append((float(t), ph))
    if not out:
        raise RuntimeError(f"{path}: no segments")
    return out


def postprocess(key: str, spk: Speaker, text: str, tmp: Path, out: Path, fmt: str) -> dict:
    """Festival's wave, segments and words -> the TIMIT-layout files of one utterance. Returns
    ``{"utt", "samples", "dropped_segments", "dropped_words"}``, or ``{"utt", "skipped": reason}``
    when Festival's words are not the sentence's words (it read something as an abbreviation or
    number): the utterance is not written, and the reason is counted."""
    said = merge_clitics([line.split() for line in (tmp / f"{key}.words").read_text().splitlines()])
    if words_differ([w for _, _, w in said], text):
        return {"utt": key.replace("__", "/"), "skipped": "festival_words_differ", "text": text,
                "festival_words": " ".join(w for _, _, w in said)}
    wav, sr = sf.read(tmp / f"{key}.wav", dtype="float32")
    if wav.ndim > 1:
        wav = wav.mean(axis=1)
    # HTS writes 32 kHz; the resample factor f reads the 16 kHz wave as if it were 16000*f Hz
    wav = resample(wav, sr, SR)
    if spk.resample != 1.0:
        wav = resample(wav, int(round(SR * spk.resample)), SR)
    phn, words, dropped, dropped_words = radio_labels(read_segs(tmp / f"{key}.segs"), said, text, len(wav),
                                                      spk.resample)
    return write_utterance(out, spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": dropped, "dropped_words": dropped_words})
