"""Speech featurizer throughput: seconds of audio per second of compute, vecset's
``Featurizer`` (torchaudio's Kaldi fbank, 25 ms / 10 ms, 40 mel bins) against
``librosa.feature.melspectrogram`` with the same frame settings (n_fft 512 over a 400-sample
window, hop 160, 40 mel bands, log), on the same audio: the shipped speech sample's test
utterances. Models alternate per repeat; median of repeats.

    python bench/features.py          # writes bench/results/features.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import librosa  # noqa: E402
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402

from bench.common import table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SR = 16000


def load_audio(root: Path, limit: int) -> list[np.ndarray]:
    names = (root / "test.lst").read_text().split()[:limit]
    return [sf.read(str(root / f"{n}.flac"), dtype="float32")[0] for n in names]


def main() -> None:
    from vecset.encoders.speech import Featurizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=ROOT / "data" / "speech")
    ap.add_argument("--utterances", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    waves = load_audio(args.root, args.utterances)
    seconds = sum(len(w) for w in waves) / SR
    fb = Featurizer("fbank", num_mel_bins=40)
    tensors = [torch.from_numpy(w) for w in waves]

    def ours():
        for w in tensors:
            fb(w)

    def theirs():
        for w in waves:
            m = librosa.feature.melspectrogram(y=w, sr=SR, n_fft=512, win_length=400, hop_length=160,
                                               n_mels=40, center=False, power=2.0)
            np.log(m + 1e-6)

    # frame counts: Kaldi frames 400-sample windows, librosa 512-sample FFT frames (no centre
    # padding in either), so librosa may give one frame fewer per utterance
    n_ours = fb(tensors[0]).shape[0]
    n_theirs = librosa.feature.melspectrogram(y=waves[0], sr=SR, n_fft=512, win_length=400, hop_length=160,
                                              n_mels=40, center=False).shape[1]
    times = {"vecset_kaldi_fbank": [], "librosa_melspectrogram": []}
    ours(), theirs()  # warmup
    for _ in range(args.repeats):
        for name, fn in (("vecset_kaldi_fbank", ours), ("librosa_melspectrogram", theirs)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        rows.append({"featurizer": name, "median_s": med, "min_s": min(ts), "max_s": max(ts),
                     "audio_s_per_s": seconds / med})
    rows[0]["speed_vs_librosa"] = rows[1]["median_s"] / rows[0]["median_s"]
    print(f"{len(waves)} utterances, {seconds:.1f} s of audio; frames of the first: ours {n_ours}, librosa {n_theirs}")
    print(table(rows, ["featurizer", "median_s", "min_s", "max_s", "audio_s_per_s", "speed_vs_librosa"]))
    print(f"wrote {write_json('features', {'audio_seconds': seconds, 'utterances': len(waves), 'rows': rows})}")


if __name__ == "__main__":
    main()
