"""scripts/make_speech_corpus.py (and its corpus_*.py parts) and scripts/speech_text.py: the
sentence filter, number spelling, the sentence-disjoint assignment, the split statistics and
speakers (pure Python); the shipped sample; and, where Festival is installed, a tiny generation
that must be identical for 1 and 2 jobs and valid TIMIT layout, and a batch that survives a
sentence Festival crashes on."""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from vecset.encoders.speech import FESTIVAL_PHONES, read_phn

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_speech_corpus.py"
spec = importlib.util.spec_from_file_location("make_speech_corpus", SCRIPT)
corpus = importlib.util.module_from_spec(spec)
sys.modules["make_speech_corpus"] = corpus
spec.loader.exec_module(corpus)
text = sys.modules["speech_text"]  # imported by the generator from scripts/
plan, common = sys.modules["corpus_plan"], sys.modules["corpus_common"]  # its parts, beside it
festival, flite = sys.modules["corpus_festival"], sys.modules["corpus_flite"]
SAMPLE = SCRIPT.parents[1] / "data" / "speech"
# a generated corpus draws its sentences from WordNet's examples
needs_wordnet = pytest.mark.skipif(not all((text.WORDNET_DIR / f).exists() for f in text.WORDNET_FILES),
                                   reason="the corpus draws its sentences from WordNet: apt-get install wordnet-base")


def espeak_missing() -> bool:
    import espeak_synth  # scripts/ is on sys.path: the generator put it there

    return espeak_synth.missing() is not None


def test_number_words_and_years():
    got = [text.number_words(n) for n in (0, 7, 15, 20, 21, 100, 105, 1200, 30_000, 1_000_001)]
    assert got == ["zero", "seven", "fifteen", "twenty", "twenty one", "one hundred", "one hundred five",
                   "one thousand two hundred", "thirty thousand", "one million one"]
    assert [text.spell_integer(t) for t in ("1990", "1905", "1900", "2005", "1,200", "42")] == [
        "nineteen ninety", "nineteen oh five", "nineteen hundred", "two thousand five",
        "one thousand two hundred", "forty two"]
    with pytest.raises(ValueError, match="out of range"):
        text.number_words(10**9)


@pytest.mark.parametrize("raw, want", [
    ("the dog ran across the street", ("The dog ran across the street.", "kept")),
    ("he was born in 1990, in June", ("He was born in nineteen ninety, in June.", "kept")),
    ("it cost 12 dollars;", ("It cost twelve dollars.", "kept")),
    ("a well-known fact, isn't it?", ("A well-known fact, isn't it?", "kept")),
    ("the café was closed today", (None, "characters")),
    ("he lived (briefly) in town", (None, "characters")),
    ("Dr. Smith came home late", (None, "characters")),
    ("it weighs 3.5 pounds now", (None, "number")),
    ("the 1990s were a decade", (None, "number")),
    ("he came 3rd in the race", (None, "number")),
    ("the FBI came to town", (None, "acronym")),
    ("Henry VIII was the king", (None, "acronym")),
    ("a heavy load", (None, "too_short")),
    (" ".join(["word"] * 17), (None, "too_long")),
    ("a well-known old fact", ("A well-known old fact.", "kept")),  # 5 words: hyphens split
])
def test_clean_sentence_reasons(raw, want):
    assert text.clean_sentence(raw) == want


def test_filter_counts_every_candidate_and_drops_duplicates_by_words():
    cands = ["the dog ran home fast", "The dog ran home, fast!", "a cat", "the 3.5 dogs ran home",
             "the cat ran home fast"]
    kept, counts = text.filter_sentences(cands)
    assert kept == ["The dog ran home fast.", "The cat ran home fast."]
    assert counts["kept"] == 2 and counts["duplicate"] == 1 and counts["too_short"] == 1 and counts["number"] == 1
    assert sum(counts.values()) == len(cands) and set(counts) == set(text.REASONS)
    assert text.words_of("A well-known fact, isn't it?") == ["a", "well", "known", "fact", "isn't", "it"]


def test_wordnet_examples_reads_quoted_examples_and_names_a_bad_line(tmp_path):
    for name in text.WORDNET_FILES:
        (tmp_path / name).write_text("  1 This software and database is provided by Princeton\n"
                                     f'00001 03 n 01 x 0 000 | a {name}; "first example here"; "second one"\n')
    got = text.wordnet_examples(tmp_path)
    assert got == ["first example here", "second one"] * 4
    (tmp_path / "data.noun").write_text("00001 03 n 01 x 0 000 no gloss here\n")
    with pytest.raises(ValueError, match=r"data\.noun:1: no ' \| ' before the gloss"):
        text.wordnet_examples(tmp_path)
    (tmp_path / "data.verb").unlink()
    with pytest.raises(SystemExit, match="data.verb.*wordnet-base"):
        text.wordnet_examples(tmp_path)


def test_sentences_used_once_seeded_and_a_prefix():
    pool = [f"Sentence number {text.number_words(i)} is here." for i in range(50)]
    a, b = plan.assign_sentences(pool, 20, seed=0), plan.assign_sentences(pool, 20, seed=0)
    assert a == b and len(set(a)) == 20 and a != pool[:20]
    assert plan.assign_sentences(pool, 8, seed=0) == a[:8]  # the sample is the full corpus's first part
    assert plan.assign_sentences(pool, 20, seed=1) != a
    with pytest.raises(SystemExit, match="exceeds the 50 distinct sentences"):
        plan.assign_sentences(pool, 51, seed=0)


def test_split_stats_counts_unseen_words():
    st = plan.split_stats({"train": ["The dog ran.", "A cat sat."], "dev": ["The dog sat."],
                             "test": ["A bird sang, the dog ran.", "The dog ran."]})
    assert st["train"] == {"utterances": 2, "word_tokens": 6, "distinct_words": 6}
    assert st["dev"]["unseen_tokens"] == 0 and st["dev"]["sentences_shared_with_train"] == 0
    assert st["test"]["unseen_tokens"] == 2 and st["test"]["unseen_token_share"] == round(2 / 9, 4)
    assert st["test"]["unseen_distinct_words"] == 2 and st["test"]["sentences_shared_with_train"] == 1


def test_merge_clitics_joins_a_split_possessive():
    # Festival 2.5: "the stranger's car" -> 's without a syllable (0 0), its z inside "stranger"
    got = common.merge_clitics([["0.22", "0.33", "the"], ["0.33", "1.01", "stranger"], ["0", "0", "'s"],
                                ["1.01", "1.36", "car"]])
    assert got == [("0.22", "0.33", "the"), ("0.33", "1.01", "stranger's"), ("1.01", "1.36", "car")]
    assert common.merge_clitics([["0.1", "0.4", "John"], ["0.4", "0.5", "'s"]]) == [("0.1", "0.5", "John's")]


def test_shipped_sample_is_sentence_and_speaker_disjoint_with_a_real_vocabulary():
    info = json.loads((SAMPLE / "corpus.json").read_text())
    lists = {s: (SAMPLE / f"{s}.lst").read_text().split() for s in ("train", "dev", "test")}
    texts = {s: [(SAMPLE / f"{u}.txt").read_text().split(" ", 2)[2].strip() for u in v] for s, v in lists.items()}
    sents = {s: {tuple(text.words_of(t)) for t in v} for s, v in texts.items()}
    assert not (sents["train"] & sents["test"]) and not (sents["train"] & sents["dev"])
    assert not (sents["dev"] & sents["test"])
    spk = {s: {u.split("/")[0] for u in v} for s, v in lists.items()}
    assert not (spk["train"] & spk["test"]) and not (spk["train"] & spk["dev"]) and not (spk["dev"] & spk["test"])
    stats = plan.split_stats(texts)
    assert stats == info["splits"]  # corpus.json's counts are those of the shipped files
    assert stats["train"]["distinct_words"] >= 400 and stats["test"]["unseen_token_share"] > 0.2
    assert info["dropped_zero_length_words"] == 0
    for u in lists["test"]:  # the word spans carry the sentence's words, in order
        wrd = [ln.split()[2] for ln in (SAMPLE / f"{u}.wrd").read_text().splitlines()]
        assert wrd == text.words_of((SAMPLE / f"{u}.txt").read_text().split(" ", 2)[2])
    assert sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file()) <= 15_000_000


def test_speakers_split_disjoint_and_cover_every_voice():
    spk = plan.make_speakers(12, seed=0)
    by = {s: [x for x in spk if x.split == s] for s in ("train", "dev", "test")}
    assert [len(by[s]) for s in ("train", "dev", "test")] == [6, 3, 3]
    for s in by.values():
        assert {x.voice for x in s} == {"kal", "ked", "slt"}
    assert all(0.9 <= x.resample <= 1.1 for x in spk)
    assert all((x.f0_mean is None) == (x.voice == "slt") for x in spk)
    with pytest.raises(ValueError, match="multiple of 3 and at least 12"):
        plan.make_speakers(10, seed=0)


def test_nine_speakers_are_refused_as_they_leave_test_without_a_speaker():
    # per base voice the speakers go train, train, dev, test: 9 speakers (3 per voice) gave no
    # test speaker at all
    with pytest.raises(ValueError, match=r"at least 12 .*got 9"):
        plan.make_speakers(9, seed=0)
    for n in (12, 15, 18):
        assert {x.split for x in plan.make_speakers(n, seed=0)} == {"train", "dev", "test"}


def test_the_shipped_15_speaker_recipe_is_unchanged():
    # data/speech (make speech-sample: 15 speakers, seed 0) must stay byte-identical
    info = json.loads((SAMPLE / "corpus.json").read_text())
    assert [s.recipe() for s in plan.make_speakers(15, seed=info["seed"])] == info["speakers"]
    tsv = (SAMPLE / "speakers.tsv").read_text().splitlines()
    assert tsv[0].split("\t")[:3] == ["name", "family", "synth"]
    assert [ln.split("\t")[1] for ln in tsv[1:]] == ["kal", "ked", "slt"] * 5


def test_utterances_that_leave_a_split_empty_are_refused_before_synthesis(tmp_path):
    # utterance i goes to speaker i mod S: with 12 speakers the first test speaker (s09) gets
    # utterance 9, so fewer than 10 utterances leave test empty; refused before Festival runs
    spk = plan.make_speakers(12, seed=0)
    with pytest.raises(SystemExit, match=r"--utterances 9 with 12 speakers leaves the test split empty.*at least 10"):
        plan.check_splits(spk, 9)
    with pytest.raises(SystemExit, match=r"leaves the dev, test splits empty"):
        corpus.generate(tmp_path / "c", utterances=3, speakers=12, seed=0, jobs=1, fmt="wav")
    assert not (tmp_path / "c").exists()
    assert plan.check_splits(spk, 10) == {"train": 6, "dev": 3, "test": 1}


def test_a_split_festival_left_empty_is_refused():
    written = {"train": ["s00kal/u00000"], "dev": ["s06kal/u00006"], "test": []}
    with pytest.raises(SystemExit, match=r"no utterance of the test split was written.*skipped"):
        plan.check_written(written)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_installs_what_the_festival_tests_need():
    """Without Festival's packages in ``make test``'s list the two Festival tests below skipped on
    a fresh machine, and CI never ran the default speech generator."""
    import re
    import subprocess

    recipe = subprocess.run(["make", "-n", "test"], cwd=SCRIPT.parents[1], capture_output=True, text=True,
                            check=True).stdout
    listed = {p for group in re.findall(r'pkgs="(?:\$\{pkgs:\+\$pkgs \})?([^"$]+)"', recipe) for p in group.split()}
    assert set(festival.PACKAGES) <= listed, sorted(set(festival.PACKAGES) - listed)


@pytest.mark.skipif(shutil.which("festival") is None, reason="Festival is not installed")
def test_generation_deterministic_for_job_counts(tmp_path):
    try:
        festival.check_festival(install=False)
    except SystemExit:
        pytest.skip("Festival voices are not installed")
    one, two = tmp_path / "one", tmp_path / "two"
    corpus.generate(one, utterances=10, speakers=12, seed=5, jobs=1, fmt="wav")
    corpus.generate(two, utterances=10, speakers=12, seed=5, jobs=2, fmt="wav")
    assert corpus.digest(one) == corpus.digest(two)
    import soundfile as sf

    for wav in one.rglob("*.wav"):
        info = sf.info(str(wav))
        assert info.samplerate == 16000 and info.channels == 1
        segs = read_phn(wav.with_suffix(".phn"), info.frames, list(FESTIVAL_PHONES))
        assert segs[0].start == 0 and segs[-1].end == info.frames
        assert segs[0].phone == "h#" == segs[-1].phone
        words = wav.with_suffix(".wrd").read_text().split()
        txt = wav.with_suffix(".txt").read_text().split()
        assert txt[:2] == ["0", str(info.frames)] and len(words) % 3 == 0 and len(words) >= 3


@pytest.mark.skipif(shutil.which("festival") is None, reason="Festival is not installed")
def test_a_sentence_festival_crashes_on_is_skipped_and_counted(tmp_path):
    spk = plan.make_speakers(12, seed=0)[0]
    batch = [("a__u0", spk, "The dog ran home."), ("a__u1", spk, "..."), ("a__u2", spk, "A cat sat down.")]
    counts: list[int] = []  # what the progress bar is told: every utterance once, said or not
    failed = festival.run_festival(batch, tmp_path, counts.append)  # Festival segfaults on text without a word
    assert failed == {"a__u1": "festival_crashed"} and sum(counts) == 3
    assert (tmp_path / "a__u0.done").exists() and (tmp_path / "a__u2.done").exists()


VOICES5 = ["kal", "slt", "espeak:en-us+m3", "espeak:en-us+f3", "espeak:en-us+klatt"]


def test_voice_families_and_their_splits():
    assert plan.family_of("espeak:en-us+f3") == "enusf3" and plan.family_of("slt") == "slt"
    with pytest.raises(ValueError, match="expected one of kal, ked, slt"):
        plan.family_of("awb")
    assert plan.family_splits(["kal", "espeak:en-us"]) == {"kal": ["train", "dev", "test"],
                                                            "enus": ["train", "dev", "test"]}
    got = plan.family_splits(VOICES5, train=["kal", "espeak:en-us+m3", "espeak:en-us+klatt"],
                               dev=["espeak:en-us+klatt"], test=["slt", "espeak:en-us+f3"])
    assert got == {"kal": ["train"], "slt": ["test"], "enusm3": ["train"], "enusf3": ["test"],
                   "enusklatt": ["train", "dev"]}
    with pytest.raises(ValueError, match=r"slt in both --train-voices and --test-voices: the test voices must be"):
        plan.family_splits(VOICES5, train=["kal", "slt"], dev=["kal"], test=["slt"])
    with pytest.raises(ValueError, match=r"enusklatt in no split"):
        plan.family_splits(VOICES5, train=["kal", "espeak:en-us+m3"], dev=["kal"], test=["slt", "espeak:en-us+f3"])
    with pytest.raises(ValueError, match=r"--dev-voices is empty"):
        plan.family_splits(VOICES5, train=["kal"], test=["slt"])
    with pytest.raises(ValueError, match=r"--test-voices names x, not in --voices \(kal, awb\)"):
        plan.family_splits(["kal", "espeak:awb"], train=["kal"], dev=["kal"], test=["espeak:awb", "espeak:x"])


def test_voice_disjoint_speakers_and_rotations():
    splits = plan.family_splits(VOICES5, train=["kal", "espeak:en-us+m3", "espeak:en-us+klatt"],
                                  dev=["espeak:en-us+klatt"], test=["slt", "espeak:en-us+f3"])
    spk = plan.make_speakers(15, 0, VOICES5, splits)
    by = {k: {s.family for s in spk if s.split == k} for k in ("train", "dev", "test")}
    assert by == {"train": {"kal", "enusm3", "enusklatt"}, "dev": {"enusklatt"}, "test": {"slt", "enusf3"}}
    es = [s for s in spk if s.synth == "espeak"]
    assert len(es) == 9 and all(140 <= s.rate <= 200 and 25 <= s.pitch <= 75 for s in es)
    assert es[0].name == "s02enusm3" and es[0].voice == "en-us+m3" and es[0].resample == 1.0
    # in-voice corpus: every family everywhere; a rotation holds one family out of train and dev
    spk = plan.make_speakers(20, 0, VOICES5)
    lists = {k: [f"{s.name}/u{i:05d}" for i, s in enumerate(spk) if s.split == k] for k in ("train", "dev", "test")}
    rot = plan.rotations(spk, lists)
    assert set(rot) == {"kal", "slt", "enusm3", "enusf3", "enusklatt"}
    r = rot["enusf3"]
    held = sorted(u for u in sum(lists.values(), []) if "enusf3" in u)
    # the held-out family's dev speakers are its voice-disjoint dev set, never in its test list
    assert r["dev_unheard"] == [u for u in held if u in lists["dev"]] and len(r["dev_unheard"]) >= 1
    assert r["test"] == [u for u in held if u not in lists["dev"]] and len(r["test"]) + len(r["dev_unheard"]) == 4
    assert not any("enusf3" in u for k in ("train", "dev", "test_in_voice") for u in r[k])
    assert len(r["train"]) == 8 and len(r["test_in_voice"]) == 4
    # one synthesizer out: no Festival speaker in the festival rotation's train or dev
    synth = {s.name: s.synth for s in spk}
    rs = plan.rotations(spk, lists, by="synth")
    assert set(rs) == {"festival", "espeak"}
    f = rs["festival"]
    assert {synth[u.split("/")[0]] for k in ("train", "dev", "test_in_voice") for u in f[k]} == {"espeak"}
    assert sorted(f["test"] + f["dev_unheard"]) == sorted(u for u in sum(lists.values(), []) if synth[u.split("/")[0]] == "festival")


@pytest.mark.skipif(espeak_missing(), reason="espeak-ng is not installed (apt-get install espeak-ng libespeak-ng1)")
@needs_wordnet
def test_an_espeak_corpus_is_valid_timit_layout_with_the_transcript_words(tmp_path):
    import soundfile as sf

    info = corpus.generate(tmp_path / "c", utterances=8, speakers=8, seed=3, jobs=1, fmt="wav",
                           voices=("espeak:en-us+m3", "espeak:en-us+f3"), train_voices=["espeak:en-us+m3"],
                           dev_voices=["espeak:en-us+m3"], test_voices=["espeak:en-us+f3"], write_rotations=True)
    root = tmp_path / "c"
    assert info["utterances"] == 8 and info["espeak"]["skipped"] == {} and set(info["espeak"]["unmappable_phonemes"]) <= {"?"}
    assert {u.split("/")[0][3:] for u in (root / "test.lst").read_text().split()} == {"enusf3"}
    assert "enusf3" not in (root / "train.lst").read_text()
    assert (root / "speakers.tsv").read_text().splitlines()[1].split("\t")[:3] == ["s00enusm3", "enusm3", "espeak"]
    for wav in root.rglob("*.wav"):
        n = sf.info(str(wav)).frames
        segs = read_phn(wav.with_suffix(".phn"), n, list(FESTIVAL_PHONES))
        assert segs[0].start == 0 and segs[-1].end == n and segs[0].phone == "h#" == segs[-1].phone
        wrd = [ln.split()[2] for ln in wav.with_suffix(".wrd").read_text().splitlines()]
        assert wrd == text.words_of(wav.with_suffix(".txt").read_text().split(" ", 2)[2])
    assert (root / "lovo" / "enusf3" / "test.lst").read_text() == (root / "test.lst").read_text()
    # holding out the only train family leaves nothing to train on: that rotation is not written, and said
    assert not (root / "lovo" / "enusm3").exists()
    assert info["voices"]["rotations_not_written"] == {"lovo/enusm3": ["train", "dev"]}


def flite_missing() -> str | None:
    import flite_synth  # scripts/ is on sys.path: the generator put it there

    return flite_synth.missing()


def test_flite_families_and_the_voices_of_festival_speakers_refused():
    assert plan.family_of("flite:awb") == "fliteawb" and plan.family_of("flite:rms") == "fliterms"
    for v, festival in (("slt", "slt"), ("kal", "kal"), ("kal16", "kal")):
        with pytest.raises(ValueError, match=rf"flite's {v} is the same recorded speaker as Festival's {festival}"):
            plan.family_of(f"flite:{v}")
    with pytest.raises(ValueError, match="flite voices offered are flite:awb, flite:rms"):
        plan.family_of("flite:awb_time")
    with pytest.raises(ValueError, match="flite:awb, flite:rms"):
        plan.family_of("awb")
    with pytest.raises(SystemExit, match="same recorded speaker"):  # refused before any synthesis
        corpus.generate(Path("/nonexistent/c"), utterances=16, speakers=8, seed=0, jobs=1, fmt="wav",
                        voices=("kal", "flite:slt"))


def test_flite_speakers_draw_tempo_and_f0_like_festivals_diphone_speakers():
    spk = plan.make_speakers(16, 0, ["kal", "espeak:en-us", "flite:awb", "flite:rms"])
    fl = [s for s in spk if s.synth == "flite"]
    assert [s.name for s in fl[:2]] == ["s02fliteawb", "s03fliterms"] and [s.voice for s in fl[:2]] == ["awb", "rms"]
    assert all(0.85 <= s.stretch <= 1.2 and s.rate is None for s in fl)
    assert all(85 <= s.f0_mean <= 145 for s in fl if s.voice == "awb")
    assert all(s.f0_mean is None for s in fl if s.voice == "rms")  # rms ignores a target F0 mean
    assert [s.resample == 1.0 for s in fl[:2]] == [True, True] and all(0.9 <= s.resample <= 1.1 for s in fl)
    for s in fl:  # speaker i's own draws from the seed, in the diphone speakers' order and ranges
        r = random.Random(f"0:speaker:{int(s.name[1:3])}")
        assert s.stretch == round(r.uniform(0.85, 1.2), 3)
        assert s.f0_mean == (round(r.uniform(85.0, 145.0), 1) if s.voice == "awb" else None)
    assert fl[0].recipe()["synth"] == "flite"


def test_rotations_leave_each_of_three_synthesizers_out():
    voices = ["kal", "slt", "espeak:en-us", "espeak:en-us+f3", "flite:awb", "flite:rms"]
    spk = plan.make_speakers(24, 0, voices)
    lists = {k: [f"{s.name}/u{i:05d}" for i, s in enumerate(spk) if s.split == k] for k in ("train", "dev", "test")}
    synth = {s.name: s.synth for s in spk}
    rs = plan.rotations(spk, lists, by="synth")
    assert set(rs) == {"festival", "espeak", "flite"}
    every = sorted(sum(lists.values(), []))
    for held, r in rs.items():
        others = {synth[u.split("/")[0]] for k in ("train", "dev", "test_in_voice") for u in r[k]}
        assert others == {"festival", "espeak", "flite"} - {held}
        assert sorted(r["test"] + r["dev_unheard"]) == [u for u in every if synth[u.split("/")[0]] == held]
        assert not set(r["test"]) & set(lists["dev"]) and set(r["dev_unheard"]) <= set(lists["dev"])
    assert len(rs["flite"]["train"]) == 8 and len(rs["flite"]["test"]) == 6  # 2 families x (2 train + test + dev)


def test_radio_labels_are_exact_after_the_resampling_factor():
    segs = [(0.2, "pau"), (0.25, "dh"), (0.31, "ax"), (0.50, "k"), (0.50001, "ae"), (0.7, "t"), (0.9, "pau")]
    said = [(0.2, 0.31, "the"), (0.31, 0.7, "cat")]
    f, n = 1.07, 13_500
    phn, words, dropped, dropped_words = common.radio_labels(segs, said, "The cat.", n, f)
    # t -> round(t * 16000 / f); ae rounds to zero samples (dropped); the last ends at the file's end
    assert phn == [[0, 2991, "h#"], [2991, 3738, "dh"], [3738, 4636, "ax"], [4636, 7477, "k"], [7477, 10467, "t"],
                   [10467, n, "h#"]]
    assert [round(t * 16000 / f) for t in (0.2, 0.25, 0.31, 0.5, 0.7)] == [2991, 3738, 4636, 7477, 10467]
    assert words == [(2991, 4636, "the"), (4636, 10467, "cat")] and dropped == 1 and dropped_words == 0


@pytest.mark.skipif(flite_missing() is not None, reason=flite_missing() or "")
def test_a_word_flite_reads_otherwise_skips_the_utterance(tmp_path):
    spk = plan.make_speakers(16, 0, ["kal", "espeak:en-us", "flite:awb", "flite:rms"])[2]
    row = flite.flite_utterance(f"{spk.name}__u00002", spk, "The boss gave me his A-list of people.", tmp_path, "wav")
    # flite says the letter name (its word "_a"), not the article of the transcript
    assert row["skipped"] == "flite_words_differ" and row["flite_words"].startswith("the boss gave me his _a list")
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(flite_missing() is not None or espeak_missing(),
                    reason=flite_missing() or "espeak-ng is not installed (apt-get install espeak-ng libespeak-ng1)")
@needs_wordnet
def test_a_flite_corpus_is_valid_timit_layout_with_exact_labels(tmp_path):
    import flite_synth
    import soundfile as sf

    root = tmp_path / "c"
    info = corpus.generate(root, utterances=15, speakers=12, seed=4, jobs=1, fmt="wav",
                           voices=("espeak:en-us", "flite:awb", "flite:rms"), write_rotations=True)
    assert info["flite"]["utterances"] == 10 and info["flite"]["skipped"] == {} and info["utterances"] == 15
    assert sorted(p.name for p in (root / "lovo_synth").iterdir()) == ["espeak", "flite"]
    assert sorted(p.name for p in (root / "lovo").iterdir()) == ["enus", "fliteawb", "fliterms"]
    spk = {s.name: s for s in plan.make_speakers(12, 4, ["espeak:en-us", "flite:awb", "flite:rms"])}
    fl = flite_synth.Flite()
    resampled = 0
    for wav in sorted(root.glob("s*flite*/*.wav")):
        n = sf.info(str(wav)).frames
        segs = read_phn(wav.with_suffix(".phn"), n, list(FESTIVAL_PHONES))
        assert segs[0].start == 0 and segs[-1].end == n and segs[0].phone == "h#" == segs[-1].phone
        assert all(a.end == b.start for a, b in zip(segs, segs[1:], strict=False))
        sentence = wav.with_suffix(".txt").read_text().split(" ", 2)[2].strip()
        wrd = [ln.split() for ln in wav.with_suffix(".wrd").read_text().splitlines()]
        assert [w for _, _, w in wrd] == text.words_of(sentence)
        # every boundary is flite's end time t at round(t * 16000 / f), the last at the file's end
        s = spk[wav.parent.name]
        fl.set_voice(s.voice, s.stretch, s.f0_mean)
        said = fl.say(sentence)
        want = [round(t * 16000 / s.resample) for t, _ in said.segments]
        assert [p for _, p in said.segments][1:-1] == [sg.phone for sg in segs][1:-1]
        assert [sg.end for sg in segs][:-1] == want[:-1] and abs(want[-1] - n) < 0.01 * 16000
        bounds = {0} | {sg.end for sg in segs}
        assert all(int(a) in bounds and int(b) in bounds and int(a) < int(b) for a, b, _ in wrd)
        resampled += s.resample != 1.0
    assert resampled >= 4


def test_rotations_that_would_write_empty_lists_are_refused_before_synthesis(tmp_path):
    """``--voices espeak:en-us --rotations`` wrote empty train and dev lists without a word."""
    with pytest.raises(SystemExit) as e:
        corpus.generate(tmp_path / "c", utterances=20, speakers=4, seed=0, jobs=1, fmt="wav",
                        voices=("espeak:en-us",), write_rotations=True)
    assert str(e.value.code).splitlines()[0] == (
        "--rotations with --voices espeak:en-us: holding out the voice family enus leaves its train and dev lists "
        "empty (no other voice family has a speaker there: enus is the only one); give --voices two or more voice "
        "families, each with train and dev speakers, or leave out --rotations")
    assert not (tmp_path / "c").exists()
    # every other family only tests: holding out the one train and dev family empties both, so that
    # rotation is not written; the test family's rotation is
    splits = plan.family_splits(["kal", "slt"], train=["kal"], dev=["kal"], test=["slt"])
    spk = plan.make_speakers(8, 0, ["kal", "slt"], splits)
    assert plan.check_rotations(spk, ["kal", "slt"]) == {"kal": ["train", "dev"]}
    assert plan.check_rotations(plan.make_speakers(8, 0, ["kal", "slt"]), ["kal", "slt"]) == {}  # in-voice
    # after synthesis: a list the synthesizers' skips emptied; refused when every rotation is empty
    assert plan.check_rotations(spk, ["kal", "espeak:en-us"], by="synth",
                                  lists={"espeak": {"train": ["a"], "dev": [], "test": ["b"]},
                                         "festival": {"train": ["c"], "dev": ["d"], "test": ["e"]}}) == {"espeak": ["dev"]}
    with pytest.raises(SystemExit, match=r"holding out the synthesizer espeak leaves its dev list empty \(no other "
                                         r"synthesizer has a speaker there, and so does every other rotation\)"):
        plan.check_rotations(spk, ["kal", "espeak:en-us"], by="synth",
                               lists={"espeak": {"train": ["a"], "dev": [], "test": ["b"]},
                                      "festival": {"train": [], "dev": ["d"], "test": ["e"]}})
