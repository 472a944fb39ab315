"""Export of a speech frame labeling model: utterance normalization, a convolutional front-end,
truncated attention (exported as a dense banded mask) and relative positions."""

from __future__ import annotations

import pytest
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


def test_bilstm_is_refused_and_the_window_mlp_exports(check_exports):
    from vecset.backbone import BiLSTM, WindowMLP
    from vecset.backbone.tracing import NotExportable
    from vecset.pipelines.export.program import ServedModel, export_program

    torch.manual_seed(0)
    lstm = TaskModule(SpeechEncoder(40, 16), BiLSTM(16, hidden=16, layers=1), LabelingHead(16, 5))
    with pytest.raises(NotExportable, match="BiLSTM: torch.export traces nn.LSTM for the example's number"):
        export_program(ServedModel.of(lstm, padded([30, 21, 9], 40)), padded([30, 21, 9], 40))
    mlp = TaskModule(SpeechEncoder(40, 16), WindowMLP(16, context=2, hidden=32, depth=1), LabelingHead(16, 5))
    check_exports(mlp, padded([30, 21, 9], 40), [padded([45, 12], 40, seed=1)])


def test_conformer_conv_and_global_normalization_export_past_512_frames():
    # configs/speech_frames.yaml's backbone convolution (eager CPU takes another path from 512
    # frames on) and speech_frames_debug.yaml's global normalization (a buffer says whether it
    # is fitted): neither may become a condition of the graph
    from vecset.pipelines.export.program import (
        ServedModel,
        example_inputs,
        export_program,
        max_difference,
    )

    torch.manual_seed(0)
    encoder = SpeechEncoder(40, 16, normalization="global", positional="none", conv_kernel=3)
    encoder.set_global_stats([torch.randn(50, 40)])
    model = TaskModule(encoder, Backbone(16, 1, 2, 2.0, window=4, conv_kernel=5), LabelingHead(16, 5))
    served = ServedModel.of(model, padded([30, 21, 9], 40))
    program = export_program(served, padded([30, 21, 9], 40))
    long = padded([520, 300], 40, seed=1)  # past the eager path's 512-frame switch
    with torch.no_grad():
        assert max_difference(served(*example_inputs(served, long)), program.module()(*example_inputs(served, long))) <= 1e-5
