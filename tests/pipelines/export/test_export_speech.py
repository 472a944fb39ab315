"""Export of a speech frame labeling model: utterance normalization, a convolutional front-end,
truncated attention (exported as a dense banded mask) and relative positions."""

from __future__ import annotations

import torch
from conftest import padded

from vecset.backbone import Backbone
from vecset.encoders import SpeechEncoder
from vecset.heads import LabelingHead, SegmentDecoder
from vecset.pipelines import TaskModule


def test_speech_frames_export_equals_pytorch(check_exports):
    torch.manual_seed(0)
    encoder = SpeechEncoder(40, 16, normalization="utterance", positional="sinusoidal", conv_kernel=3, window=4)
    model = TaskModule(encoder, Backbone(16, 1, 2, 2.0, relative_positions=3), LabelingHead(16, 5, decoder=SegmentDecoder()))
    # 30 frames > 4 x window: eager PyTorch runs the blocked path, the export the dense band
    served = check_exports(model, padded([30, 21, 9], 40), [padded([45, 12], 40, seed=1), padded([8, 8, 8, 3], 40, seed=2)])
    assert served.outputs == ["logits"]
