"""GlobalStandardization (encoders/standardize.py), shared by the speech and time-series encoders."""

import pytest
import torch

from vecset.encoders import SpeechEncoder
from vecset.encoders.timeseries import TimeSeriesEncoder


@pytest.mark.parametrize("make", [lambda: SpeechEncoder(in_dim=3, d_model=8, normalization="global"),
                                  lambda: TimeSeriesEncoder(in_dim=3, d_model=8, normalization="global")])
def test_fitted_statistics_and_their_checkpoint(make):
    torch.manual_seed(0)
    rows = [torch.randn(5, 3) * 2 + 1, torch.randn(7, 3) * 2 + 1]
    enc = make()
    x = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match=r"\(normalization='global'\) has no statistics"):
        enc.standardize(x, "training rows")
    enc.set_global_stats(rows)
    ref = torch.cat(rows).double()
    torch.testing.assert_close(enc.standardize(x, "rows"), ((x - ref.mean(0)) / ref.std(0)).float())
    loaded = make()
    loaded.load_state_dict(enc.state_dict())  # the checkpoint carries them; known without reading a buffer per step
    assert loaded._stats_known
    torch.testing.assert_close(loaded.standardize(x, "rows"), enc.standardize(x, "rows"))


def test_a_single_row_or_a_constant_feature_divides_by_one_not_nan():
    enc = TimeSeriesEncoder(in_dim=2, d_model=8)
    enc.set_global_stats([torch.tensor([[1.0, 2.0]])])
    assert enc.std.tolist() == [1.0, 1.0]
    enc.set_global_stats([torch.tensor([[1.0, 2.0], [1.0, 4.0]])])
    assert enc.std[0].item() == pytest.approx(1e-5) and enc.std[1].item() == pytest.approx(2 ** 0.5)


def test_rows_of_another_width_are_an_error_naming_the_encoder():
    with pytest.raises(ValueError, match=r"SpeechEncoder\(in_dim=3\) got training rows of 4 features"):
        SpeechEncoder(in_dim=3, d_model=8, normalization="global").set_global_stats([torch.zeros(2, 4)])
