"""bench/checkout_ratio.py: a timed run of a job in a checkout, and its error when a run fails."""

from pathlib import Path

import pytest

from bench.checkout_ratio import ROOT, timed_run


def test_a_timed_run_gives_the_items_per_second_of_the_steps_after_the_warm_up():
    rate = timed_run(ROOT, "configs/debug.yaml", 2, ["--trainer.log_every_n_steps", "1"])
    assert rate > 0


def test_a_run_that_fails_names_the_checkout_and_the_config(tmp_path: Path):
    with pytest.raises(RuntimeError, match=r"configs/debug\.yaml gave no timing \(exit [12]\)"):
        timed_run(ROOT, "configs/debug.yaml", 2, ["--model.init_args.lr", "not-a-number"])
