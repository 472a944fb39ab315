"""Speech frames: TIMIT-layout readers, Kaldi filterbank features, frame labels, SpeechEncoder.

``SpeechReader.read`` (``reader.py``) is the one call from an audio file to a labelled,
featurized ``Utterance`` (the .phn, .wrd and .txt beside it found and read there; or a Praat
TextGrid, Kaldi CTM or Buckeye .phones alignment: ``alignment_reader.py``).

Features: ``torchaudio.compliance.kaldi.fbank`` (or ``.mfcc``) with 25 ms frames and a 10 ms
shift (Povey et al. 2011, the Kaldi toolkit). Masking in training: SpecAugment (Park et al.
2019) with ``torchaudio.transforms.FrequencyMasking`` / ``TimeMasking``. Phone sets: TIMIT's
61 phones and the 39-class folding of Lee & Hon 1989 ("Speaker-independent phone recognition
using hidden Markov models"); Festival's radio phone set plus ``h#``.

Frame-label rule (the frame-centre rule). With ``snip_edges`` framing (Kaldi's default), frame
t covers samples [t*S, t*S + L) (S = 160, L = 400 at 16 kHz) and there are
1 + (n - L) // S frames. Its centre is c_t = t*S + L/2 (a point between samples, 200 at t=0).
Frame t takes the label of the segment [start, end) of the .phn file with start <= c_t < end:
a boundary exactly at a frame centre gives the frame to the later segment. Writing predictions
back as segments inverts this: frame t owns samples [c_t - S/2, c_t + S/2), the first segment
starts at 0 and the last ends at the file's end.

Other sample rates. A .phn counts samples of its own audio file, at the file's rate r (TIMIT's
convention). The audio is resampled to 16 kHz, which keeps time: sample i of the result lies at
i / 16000 s (torchaudio's sinc resampling has no delay; a test holds it). The rule is applied in
time, exactly, in integers: start * 16000 <= c_t * r < end * 16000. Predicted boundaries are
written back in the file's own samples, rounded to the nearest one (they lie S/2 from any centre,
so a .phn written and read back gives the same frames at any r above 100 Hz)."""

from vecset.encoders.speech.alignment import (
    Segment,
    frame_centres,
    frame_labels,
    frames_to_segments,
    read_phn,
    write_phn,
)
from vecset.encoders.speech.alignment_formats import AlignmentFormat, PhoneMap
from vecset.encoders.speech.alignment_reader import AlignmentReader, AlignmentSource
from vecset.encoders.speech.audio import Audio, audio_extensions, check_wav_complete, read_audio
from vecset.encoders.speech.encoder import Normalization, SpeechEncoder
from vecset.encoders.speech.features import Featurizer, featurize
from vecset.encoders.speech.framing import FRAME_LENGTH, FRAME_SHIFT, SAMPLE_RATE, num_frames
from vecset.encoders.speech.phones import (
    FESTIVAL_PHONES,
    FOLD39,
    TIMIT39,
    TIMIT61,
    PhoneSet,
    fold39_runs,
    phone_names,
    scoring_phones,
)
from vecset.encoders.speech.reader import (
    COMPANION_EXTS,
    INT16_SCALE,
    AudioFile,
    SpeechReader,
    Utterance,
    find_audio,
    find_companion,
    read_sentences,
    read_vocabulary,
    to_int16,
)
from vecset.encoders.speech.streaming import (
    Recording,
    frames_stats,
    read_frames,
    recording_info,
    recording_stats,
)
from vecset.encoders.speech.transcripts import (
    Word,
    normalise_sentence,
    read_txt,
    read_wrd,
    word_frames,
)

__all__ = ["AlignmentFormat", "AlignmentReader", "AlignmentSource", "PhoneMap", "Audio", "AudioFile", "COMPANION_EXTS", "INT16_SCALE", "SpeechReader", "Utterance", "featurize", "find_audio", "find_companion", "read_sentences", "read_vocabulary", "to_int16", "FESTIVAL_PHONES", "FOLD39", "FRAME_LENGTH", "FRAME_SHIFT", "Featurizer", "Normalization", "PhoneSet", "Recording", "SAMPLE_RATE", "Segment", "SpeechEncoder", "TIMIT39", "TIMIT61", "audio_extensions", "check_wav_complete", "frame_centres", "frame_labels", "fold39_runs", "frames_stats", "frames_to_segments", "normalise_sentence", "num_frames", "phone_names", "read_audio", "read_frames", "read_phn", "write_phn", "read_txt", "read_wrd", "recording_info", "recording_stats", "scoring_phones", "Word", "word_frames"]
