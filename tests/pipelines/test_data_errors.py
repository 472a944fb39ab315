"""A bad data file reaches the user as one line (issue 57): ``error: <file>[:line]: <reason>``, one
hint line, exit 2, nothing left under runs/: the command's one mechanism (pipelines/data_errors.py),
for every job's data module. Each case builds its bad file in tmp_path and runs ``vecset fit`` in
the process; the errors surface at setup, before any step."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import pytorch_lightning as pl
import soundfile as sf
from speech_corpus_helpers import textgrid

from vecset.contracts.data_errors import DataFileError
from vecset.encoders.speech import AlignmentSource
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data_errors import data_error
from vecset.pipelines.speech.options import SpeechSplits

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1",
         "--trainer.limit_val_batches=1", "--trainer.limit_test_batches=1"]


def run(tmp_path: Path, monkeypatch, capsys, argv: list[str]) -> list[str]:
    """``vecset fit`` in ``tmp_path``; the lines it wrote to stderr (it must exit 2, leave no run)."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", *argv, *QUIET])
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 4, err
    if len(lines) > 1:  # one hint line, last
        assert lines[-1].strip().startswith("(") and "JSONARGPARSE_DEBUG=true shows the traceback" in lines[-1]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*")), list((tmp_path / "runs").rglob("*"))
    return lines


# -- time series: the shipped Japanese Vowels copied, one file made bad ---------------------------
TS = ["--config", str(CONFIGS / "timeseries_debug.yaml"), "--data.init_args.root=jv"]


def jv(tmp_path: Path) -> Path:
    out = tmp_path / "jv"
    shutil.copytree(ROOT / "data" / "japanese_vowels", out)
    return out


def set_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def ts_missing_file(root: Path) -> str:
    set_line(root / "labels.csv", 4, "missing.csv,1,train")
    return r"^error: jv/labels\.csv:4: series file missing\.csv not found in jv$"


def ts_nan(root: Path) -> str:
    row = (root / "train_005.csv").read_text().splitlines()[2].split(",")
    set_line(root / "train_005.csv", 3, ",".join(["nan", *row[1:]]))
    return r"^error: jv/train_005\.csv:3: column \w+: nan is not a finite number"


def ts_ragged(root: Path) -> str:
    row = (root / "train_005.csv").read_text().splitlines()[3].split(",")
    set_line(root / "train_005.csv", 4, ",".join(row[:-2]))
    return r"^error: jv/train_005\.csv:4: 10 values, the header names 12 channels"


def ts_header_only(root: Path) -> str:
    path = root / "train_005.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n")
    return r"^error: jv/train_005\.csv: an empty series \(a header and no rows\)"


def ts_other_channels(root: Path) -> str:
    path = root / "train_005.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([",".join(f"x{i}" for i in range(12)), *lines[1:]]) + "\n")
    return r"^error: jv/train_005\.csv:1: channels \['x0', .* differ from the other files'"


def ts_abc(root: Path) -> str:
    row = (root / "train_005.csv").read_text().splitlines()[1].split(",")
    set_line(root / "train_005.csv", 2, ",".join([row[0], "abc", *row[2:]]))
    return r"^error: jv/train_005\.csv:2: column \w+: 'abc' is not a number$"


def ts_unseen_label(root: Path) -> str:
    lines = (root / "labels.csv").read_text().splitlines()
    n = next(i for i, line in enumerate(lines, 1) if line.endswith(",test"))
    set_line(root / "labels.csv", n, lines[n - 1].split(",")[0] + ",sideways,test")
    return rf"^error: jv/labels\.csv:{n}: label 'sideways' of test series \S+ is not a training label"


# -- speech: 2 utterances of each split of the sample, as TextGrids, CTM or .phn -------------------
SPEECH = ["--config", str(CONFIGS / "speech_frames_debug.yaml"), "--data.init_args.root=sp"]


def speech(tmp_path: Path) -> Path:
    """The first 2 utterances of each list of the sample (audio, .phn, .wrd), in ``tmp_path/sp``."""
    src, out = ROOT / "data" / "speech", tmp_path / "sp"
    for lst in ("train.lst", "dev.lst", "test.lst"):
        ids = (src / lst).read_text().split()[:2]
        (out / lst).parent.mkdir(parents=True, exist_ok=True)
        (out / lst).write_text("\n".join(ids) + "\n")
        for u in ids:
            (out / u).parent.mkdir(parents=True, exist_ok=True)
            for ext in (".flac", ".phn", ".wrd", ".txt"):
                if (src / u).with_suffix(ext).exists():
                    shutil.copy((src / u).with_suffix(ext), (out / u).with_suffix(ext))
    return out


def first_utterance(root: Path) -> Path:
    return root / ((root / "train.lst").read_text().split()[0] + ".flac")


def phones_of(audio: Path) -> tuple[int, int, list[tuple[int, int, str]]]:
    """(rate, samples, the .phn's rows) of ``audio``."""
    info = sf.info(str(audio))
    rows = [(int(a), int(b), c) for a, b, c in (line.split() for line in audio.with_suffix(".phn").read_text().splitlines())]
    return info.samplerate, info.frames, rows


def to_textgrids(root: Path, change=None, with_words: bool = True) -> Path:
    """Every utterance's .phn/.wrd as a TextGrid instead; ``change(rows)`` edits the first training
    utterance's phone rows (seconds). The first training utterance's TextGrid path."""
    first = first_utterance(root)
    for phn in sorted(root.rglob("*.phn")):
        audio = phn.with_suffix(".flac")
        rate, n, rows = phones_of(audio)
        phones = [(a / rate, b / rate, c) for a, b, c in rows]
        words = [(int(a) / rate, int(b) / rate, c) for a, b, c in
                 (line.split() for line in phn.with_suffix(".wrd").read_text().splitlines())]
        # the words tier without gaps, as Praat writes it
        filled, t = [], 0.0
        for a, b, w in words:
            if a > t:
                filled.append((t, a, ""))
            filled.append((a, b, w))
            t = b
        if t < n / rate:
            filled.append((t, n / rate, ""))
        if audio == first and change is not None:
            phones = change(phones)
        phn.with_suffix(".TextGrid").write_text(textgrid(phones, filled if with_words else None))
        phn.unlink()
        phn.with_suffix(".wrd").unlink()
    return first.with_suffix(".TextGrid")


def rel(path: Path, root: Path) -> str:
    return re.escape(str(path.relative_to(root.parent)))


def sp_overlap(root: Path) -> str:
    tg = to_textgrids(root, lambda p: [p[0], (p[1][0] - 0.02, p[1][1], p[1][2]), *p[2:]])
    return rf"^error: {rel(tg, root)}: tier 'phones', interval 2 .* overlaps the previous interval"


def sp_unsorted(root: Path) -> str:
    tg = to_textgrids(root, lambda p: [p[0], p[2], p[1], *p[3:]])
    return rf"^error: {rel(tg, root)}: tier 'phones', interval 3 .* starts before the previous interval .* not in time order"


def sp_past_end(root: Path) -> str:
    tg = to_textgrids(root, lambda p: [*p[:-1], (p[-1][0], p[-1][1] + 0.5, p[-1][2])])
    return rf"^error: {rel(tg, root)}: tier 'phones', interval \d+ .* runs past the end of the audio"


def sp_unknown_label(root: Path) -> str:
    tg = to_textgrids(root, lambda p: [p[0], (p[1][0], p[1][1], "zz"), *p[2:]])
    return rf"^error: {rel(tg, root)}: tier 'phones', interval 2 .* label 'zz' maps to no phone of the festival set"


def sp_empty_tier(root: Path) -> str:
    tg = to_textgrids(root, lambda p: [])
    return rf"^error: {rel(tg, root)}: no phone intervals"


def sp_no_phones_tier(root: Path) -> str:
    first = first_utterance(root)
    to_textgrids(root)
    tg = first.with_suffix(".TextGrid")
    tg.write_text(tg.read_text().replace('name = "phones"', 'name = "segments"'))
    return rf"^error: {rel(tg, root)}: no tier 'phones' \(its tiers: 'segments', 'words'\)"


def sp_truncated(root: Path) -> str:
    tg = to_textgrids(root)
    text = tg.read_text()
    tg.write_text(text[:len(text) // 2])
    return rf"^error: {rel(tg, root)}: cannot read it as a Praat TextGrid"


def sp_phn_past_end(root: Path) -> str:
    audio = first_utterance(root)
    rate, n, rows = phones_of(audio)
    a, b, c = rows[-1]
    rows[-1] = (a, b + rate // 2, c)
    audio.with_suffix(".phn").write_text("".join(f"{a} {b} {c}\n" for a, b, c in rows))
    return rf"^error: {rel(audio.with_suffix('.phn'), root)}:{len(rows)}: .*past the end of the audio"


def sp_missing_ctm(root: Path) -> tuple[str, list[str]]:
    return r"^error: data\.init_args\.alignment\.phone_ctm: sp/phones\.ctm: no such file or folder \(tried ", ["--data.init_args.alignment.phone_ctm=phones.ctm"]


def sp_no_words_tier(root: Path) -> str:
    tg = to_textgrids(root, with_words=False)
    return rf"^error: {rel(tg, root)}: no tier 'words' \(its tiers: 'phones'\); set the data module's phone_tier / word_tier"


def resample_all(root: Path, rate: int) -> Path:
    """Every audio file rewritten at ``rate`` (3x repeated or every 2nd sample: the same seconds),
    its .phn left in samples at 16 kHz. The first training utterance's .phn."""
    for audio in root.rglob("*.flac"):
        x, r = sf.read(str(audio))
        sf.write(str(audio), x.repeat(rate // r) if rate > r else x[::r // rate], rate)
    return first_utterance(root).with_suffix(".phn")


def sp_48k_audio(root: Path) -> str:
    phn = resample_all(root, 48000)
    return (rf"^error: {rel(phn, root)}: the alignment ends at sample \d+ .* 33% into its audio .* at 48000 Hz .*"
            r"the likely cause: the alignment's sample rate is 16000 Hz, the audio's 48000 Hz")


def sp_8k_audio(root: Path) -> str:
    phn = resample_all(root, 8000)
    return (rf"^error: {rel(phn, root)}:\d+: segment .* runs past the end of the audio .* at 8000 Hz.*"
            r"the likely cause: the alignment's sample rate is 16000 Hz, the audio's 8000 Hz")


def ts_very_long(root: Path) -> str:
    header = (root / "train_005.csv").read_text().splitlines()[0]
    (root / "train_005.csv").write_text(header + "\n" + ("0.5," * 11 + "0.5\n") * 200_000)
    return (r"^error: jv/train_005\.csv \(200000 time steps\): its set of 200000 vectors is longer than attention can "
            r"take here: full attention over a batch of 16 sets holds 16 x 2 x 200000 x 200000 weights \(batch x heads "
            r"x N x N, float32\), about \d+\.\d GiB, but .* is free on cpu\. At most \d+ vectors a set fit at batch_size 16: "
            r"crop or split the long sets")


# -- molecules: a tiny FreeSolv CSV --------------------------------------------------------------
MOL = ["--config", str(CONFIGS / "freesolv.yaml"), "--data.init_args.csv_path=mol.csv", "--data.init_args.cache=false",
       "--data.init_args.batch_size=4", "--trainer.max_time=null"]


def molecules(tmp_path: Path) -> Path:
    lines = (ROOT / "data" / "molecules" / "freesolv.csv").read_text().splitlines()
    (tmp_path / "mol.csv").write_text("\n".join(lines[:31]) + "\n")
    return tmp_path / "mol.csv"


def mol_no_geometry(path: Path) -> tuple[str, list[str]]:
    # the encoder's geometry follows the data's (a linked value): given differently, one line at parse
    return (r"^error: 3-D geometry given twice: model\.init_args\.encoder\.init_args\.geometry=distance_gaussian but "
            r"data\.init_args\.features\.geometry=false", ["--data.init_args.features.geometry=false",
                                                          "--data.init_args.features.surface=false",
                                                          "--model.init_args.encoder.init_args.geometry=distance_gaussian"])


def mol_one_row(path: Path) -> str:
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
    return r"^error: mol\.csv: too few rows for split.method='random': 1 usable \(of 1 in the file\)"


def mol_no_target(path: Path) -> str:
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0].replace("expt", "measured"), *lines[1:]]) + "\n")
    return r"^error: mol\.csv: column\(s\) \['expt'\] not in the file; its columns are"


CASES = {
    "ts-missing-file": (jv, TS, ts_missing_file),
    "ts-nan": (jv, TS, ts_nan),
    "ts-ragged-row": (jv, TS, ts_ragged),
    "ts-header-only": (jv, TS, ts_header_only),
    "ts-other-channels": (jv, TS, ts_other_channels),
    "ts-abc": (jv, TS, ts_abc),
    "ts-unseen-test-label": (jv, TS, ts_unseen_label),
    "sp-textgrid-overlap": (speech, SPEECH, sp_overlap),
    "sp-textgrid-unsorted": (speech, SPEECH, sp_unsorted),
    "sp-textgrid-past-end": (speech, SPEECH, sp_past_end),
    "sp-textgrid-unknown-label": (speech, SPEECH, sp_unknown_label),
    "sp-textgrid-empty-phone-tier": (speech, SPEECH, sp_empty_tier),
    "sp-textgrid-no-phones-tier": (speech, SPEECH, sp_no_phones_tier),
    "sp-textgrid-truncated": (speech, SPEECH, sp_truncated),
    "sp-phn-past-end": (speech, SPEECH, sp_phn_past_end),
    "sp-missing-ctm": (speech, SPEECH, sp_missing_ctm),
    "sp-textgrid-no-words-tier": (speech, SPEECH, sp_no_words_tier),
    "mol-geometry-false": (molecules, MOL, mol_no_geometry),
    "mol-one-row": (molecules, MOL, mol_one_row),
    "mol-missing-target": (molecules, MOL, mol_no_target),
    # issue 57 item 4: audio and alignment at other sample rates
    "sp-48k-audio-16k-phn": (speech, SPEECH, sp_48k_audio),
    "sp-8k-audio-16k-phn": (speech, SPEECH, sp_8k_audio),
    # issue 57 item 3: one very long series among short ones is refused at setup, before a step
    "ts-one-very-long-series": (jv, TS, ts_very_long),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_data_file_is_one_error_line(case, tmp_path, monkeypatch, capsys):
    build, argv, spoil = CASES[case]
    made = spoil(build(tmp_path))
    expected, extra = made if isinstance(made, tuple) else (made, [])
    lines = run(tmp_path, monkeypatch, capsys, [*argv, *extra])
    assert re.search(expected, lines[0]), lines


# -- issue 60: CTM times rounded to 1 ms, a last phone a few ms past the audio -------------------
def ctm_root(tmp_path: Path, edit) -> Path:
    """The small sample with a phone CTM whose rows ``edit(rows)`` changes (rows: [utt, ch, start,
    dur, label] strings, times in seconds)."""
    from vecset.encoders.speech.alignment import read_phn

    root = speech(tmp_path)
    rows = []
    for phn in sorted(root.rglob("*.phn")):
        rate = sf.info(str(phn.with_suffix(".flac"))).samplerate
        n = sf.info(str(phn.with_suffix(".flac"))).frames
        rows += [[phn.stem, "1", repr(s.start / rate), repr((s.end - s.start) / rate), s.phone]
                 for s in read_phn(phn, n, sample_rate=rate)]
    (root / "phones.ctm").write_text("".join(" ".join(r) + "\n" for r in edit(rows)))
    return root


def rounded(rows: list[list[str]]) -> list[list[str]]:
    return [[u, c, f"{float(s):.3f}", f"{float(d):.3f}", p] for u, c, s, d, p in rows]


def last_longer(by: float):
    def edit(rows):
        ends = {}
        for i, r in enumerate(rows):
            ends[r[0]] = i
        rows[ends[rows[0][0]]][3] = repr(float(rows[ends[rows[0][0]]][3]) + by)
        return rows
    return edit


def test_a_ctm_rounded_to_1_ms_and_a_phone_4_ms_past_the_end_are_mended_and_counted(tmp_path, capsys):
    from vecset.pipelines.speech.data import SpeechFramesDataModule

    root = ctm_root(tmp_path, lambda rows: last_longer(0.004)(rounded(rows)))
    dm = SpeechFramesDataModule(root=str(root), splits=SpeechSplits(max_utterances=2), alignment=AlignmentSource(phone_ctm="phones.ctm"))
    dm.setup("fit")
    out = capsys.readouterr().out
    m = re.search(r"(\d+) gaps of at most 10 ms closed", out)
    assert m and int(m[1]) > 0, out
    assert "1 ends at most 10 ms past the audio cut at its end" in out, out
    u = dm.sets["train"].items[0]
    assert u.segments[-1].end == sf.info(str(first_utterance(root))).frames


@pytest.mark.parametrize("edit,message", [
    # a gap of 11 ms between the first two phones of the first utterance
    (lambda rows: [rows[0], [*rows[1][:2], repr(float(rows[1][2]) + 0.011), repr(float(rows[1][3]) - 0.011),
                             rows[1][4]], *rows[2:]], r"gap of 176 samples before .* phone intervals must be contiguous"),
    (last_longer(0.011), r"runs past the end of the audio"),
])
def test_a_ctm_gap_or_overrun_over_10_ms_is_still_refused(tmp_path, edit, message):
    from vecset.pipelines.speech.data import SpeechFramesDataModule

    root = ctm_root(tmp_path, edit)
    dm = SpeechFramesDataModule(root=str(root), splits=SpeechSplits(max_utterances=2), alignment=AlignmentSource(phone_ctm="phones.ctm"))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(root / 'phones.ctm'))}: line \d+ .*{message}"):
        dm.setup("fit")


# -- the classifier: a user's data error, or a bug that keeps its traceback ------------------------
class Reads(pl.LightningDataModule):
    """A data module whose setup raises what it is given."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def setup(self, stage: str | None = None) -> None:
        raise self.error


def raised(call) -> BaseException:
    try:
        call()
    except BaseException as e:  # noqa: BLE001 - the test looks at it
        return e
    raise AssertionError("nothing raised")


@pytest.mark.parametrize("error,first", [
    (ValueError("a.csv:3: 'x' is not a number"), "error: a.csv:3: 'x' is not a number"),
    (FileNotFoundError(2, "No such file or directory", "b.csv"), "error: [Errno 2] No such file or directory: 'b.csv'"),
    (KeyError("expt"), "error: KeyError: 'expt'"),
    (DataFileError("c.csv", "no rows", 1), "error: c.csv:1: no rows"),
])
def test_an_error_raised_while_a_data_module_reads_is_the_users(error, first):
    report = data_error(raised(Reads(error).setup))
    assert report is not None and report.lines()[0] == first
    assert "Reads.setup" in report.lines()[-1] and "JSONARGPARSE_DEBUG=true" in report.lines()[-1]


@pytest.mark.parametrize("error", [TypeError("bad operand"), AttributeError("no x"), IndexError("out of range"),
                                   RuntimeError("mat1 and mat2 shapes cannot be multiplied")])
def test_a_bug_in_a_data_module_keeps_its_traceback(error):
    assert data_error(raised(Reads(error).setup)) is None


def test_a_value_error_outside_the_data_is_not_taken_for_the_users():
    def model_code():
        raise ValueError("d_model must be even")

    assert data_error(raised(model_code)) is None


def in_worker(error: BaseException) -> BaseException:
    """``error`` as torch's DataLoader re-raises it from a worker process."""
    from torch._utils import ExceptionWrapper

    def worker():
        try:
            raise error
        except BaseException:  # noqa: BLE001 - wrapped as a worker does
            return ExceptionWrapper(where="in DataLoader worker process 0")

    return raised(worker().reraise)


def test_an_error_in_a_dataloader_worker_is_named_by_its_own_message():
    report = data_error(in_worker(ValueError("d.csv:7: a ragged row")))
    assert report is not None and report.lines()[0] == "error: d.csv:7: a ragged row"
    assert data_error(in_worker(TypeError("unsupported operand"))) is None


def test_a_missing_csv_is_found_when_the_config_is_read(tmp_path, monkeypatch, capsys):
    lines = run(tmp_path, monkeypatch, capsys, [*MOL[:2], "--data.init_args.csv_path=nowhere.csv"])
    assert lines[0].startswith(f"error: data.init_args.csv_path: nowhere.csv: no such file or folder (tried {tmp_path}/nowhere.csv and the shipped data")


def test_the_paths_checked_at_config_time_are_those_the_subcommand_reads():
    from vecset.pipelines.speech.data import SpeechFramesDataModule

    args = {"root": "corpus", "alignment": {"phone_ctm": "phones.ctm"}, "predict": {"paths": ["a.flac"]}}
    assert SpeechFramesDataModule.input_paths(args, "fit") == {"root": Path("corpus"),
                                                               "alignment.phone_ctm": Path("corpus/phones.ctm")}
    assert SpeechFramesDataModule.input_paths(args, "predict") == {}  # the predict files only: setup names them


def test_jsonargparse_debug_keeps_the_traceback(tmp_path, monkeypatch):
    ts_abc(jv(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JSONARGPARSE_DEBUG", "true")
    with pytest.raises(DataFileError, match=r"^jv/train_005\.csv:2: column \w+: 'abc' is not a number$"):
        run_cli(["fit", *TS, *QUIET])


def test_a_key_error_in_a_dataloader_worker_says_it_is_one():
    assert data_error(in_worker(KeyError("expt"))).lines()[0] == "error: KeyError: 'expt'"
