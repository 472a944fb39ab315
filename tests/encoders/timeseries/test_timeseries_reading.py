"""The time-series reader (encoders/timeseries/reading.py): a folder of CSV series and labels.csv;
each bad input is an error whose first line names the file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vecset.encoders.timeseries import (
    TimeSeriesEncoder,
    class_names_of,
    collate_series,
    read_labels,
    read_series,
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def first_line(e: pytest.ExceptionInfo) -> str:
    return str(e.value).splitlines()[0]


def test_a_series_is_its_rows_of_channels(tmp_path):
    x, names = read_series(write(tmp_path / "a.csv", "x,y,z\n1,2,3\n4,5,6.5\n"))
    assert names == ["x", "y", "z"] and x.dtype == torch.float32
    torch.testing.assert_close(x, torch.tensor([[1, 2, 3], [4, 5, 6.5]]))


@pytest.mark.parametrize("text,expected", [
    ("x,y,z\n1,2,3\n4,5\n", "a.csv:3: 2 values, the header names 3 channels"),
    ("x,y,z\n1,abc,3\n", "a.csv:2: column y: 'abc' is not a number"),
    ("x,y,z\n1,2,3\n1,2,nan\n", "a.csv:3: column z: nan is not a finite number"),
    ("x,y,z\n1,inf,3\n", "a.csv:2: column y: inf is not a finite number"),
    ("x,y,z\n", "a.csv: an empty series (a header and no rows)"),
    ("x,,z\n1,2,3\n", "a.csv:1: the header must name every channel"),
])
def test_a_bad_series_names_its_file_line_and_column(tmp_path, text, expected):
    with pytest.raises(ValueError) as e:
        read_series(write(tmp_path / "a.csv", text))
    assert first_line(e).startswith(f"{tmp_path}/{expected}")


def test_channels_differing_from_the_other_files_are_an_error(tmp_path):
    with pytest.raises(ValueError) as e:
        read_series(write(tmp_path / "b.csv", "x,z,y\n1,2,3\n"), channels=["x", "y", "z"])
    assert first_line(e) == (f"{tmp_path / 'b.csv'}:1: channels ['x', 'z', 'y'] differ from the other files' "
                             "['x', 'y', 'z'] (every series names the same channels in the same order)")


def test_a_missing_series_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        read_series(tmp_path / "gone.csv")
    assert first_line(e) == f"{tmp_path / 'gone.csv'}: series file not found"


def test_labels_rows_and_their_errors(tmp_path):
    rows = read_labels(write(tmp_path / "labels.csv", "file,label,split\na.csv,b,train\nc.csv,a,train\nd.csv,z,test\n"))
    assert [(r.file, r.label, r.split, r.line) for r in rows][0] == ("a.csv", "b", "train", 2)
    assert class_names_of(rows) == ["a", "b"]  # the training labels: z is a test row's
    with pytest.raises(ValueError) as e:
        read_labels(write(tmp_path / "l2.csv", "file,label,split\na.csv,b,dev\n"))
    assert first_line(e) == f"{tmp_path / 'l2.csv'}:2: column split: 'dev' (expected one of train, val, test)"
    with pytest.raises(ValueError) as e:
        read_labels(write(tmp_path / "l3.csv", "name,class\na.csv,b\n"))
    assert first_line(e).startswith(f"{tmp_path / 'l3.csv'}:1: header ['name', 'class']")
    with pytest.raises(ValueError) as e:
        read_labels(write(tmp_path / "l4.csv", "file,label\na.csv,b\na.csv,c\n"))
    assert first_line(e) == f"{tmp_path / 'l4.csv'}:3: a.csv is listed again (first on line 2)"


def test_the_encoded_set_has_a_vector_per_step_and_padding_changes_no_real_vector():
    torch.manual_seed(0)
    enc = TimeSeriesEncoder(in_dim=4, d_model=16, positional="sinusoidal").eval()
    short, long = torch.randn(3, 4), torch.randn(5, 4)
    enc.set_global_stats([short, long])
    batch = collate_series([{"x": short, "y": 0, "id": 0}, {"x": long, "y": 1, "id": 1}])
    vs = enc(batch)
    assert vs.x.shape == (2, 5, 16) and vs.mask.tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    assert vs.padded is True and torch.equal(vs.x[0, 3:], torch.zeros(2, 16))
    alone = enc(collate_series([{"x": short, "y": 0, "id": 0}]))
    torch.testing.assert_close(vs.x[0, :3], alone.x[0])
    # the statistics standardize each channel over the training steps
    z = (torch.cat([short, long]) - enc.mean) / enc.std
    torch.testing.assert_close(z.mean(0), torch.zeros(4), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="^TimeSeriesEncoder expects 4 channels per time step, got 3"):
        enc(collate_series([{"x": torch.randn(2, 3), "y": 0, "id": 0}]))
