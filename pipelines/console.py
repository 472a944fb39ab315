"""What the ``vecset`` command prints while it trains: Lightning's rich progress bar and model
summary, minus what they get wrong for vecset's runs, and a progress bar for slow data work.

- ``ProgressBar``: Lightning 2.6's ``RichProgressBar`` titles an epoch ``Epoch {e}/{max_epochs - 1}``,
  so a step-limited run (``max_steps``, where Lightning sets ``max_epochs`` to -1) read
  ``Epoch 38/-2``. Without an epoch limit it reads ``Epoch 38``.
- ``ModelSummary``: Lightning's summary has a FLOPs column and a "Total FLOPs" line, which it
  fills only by running the module's ``example_input_array`` (``utilities/model_summary``):
  vecset's modules take a batch dict and have none, so every count read 0. Both are left out.
- ``Bar`` and ``track``: a rich progress bar over slow data work (featurizing molecules,
  synthesizing a speech corpus), quiet where the console is not a terminal (a log file, a test).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from pytorch_lightning.callbacks import RichModelSummary, RichProgressBar
from pytorch_lightning.utilities.model_summary.model_summary import (
    get_formatted_model_size,
    get_human_readable_count,
)
from rich import get_console
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

FLOPS = "FLOPs"
T = TypeVar("T")


class Bar:
    """A rich progress bar over ``total`` pieces of work (description, bar, done/total, elapsed
    and remaining time), moved on by ``advance`` as pieces finish (from any thread); ``done``
    counts them. Quiet where the console (default: rich's, on stdout) is not a terminal.

    ``with Bar("synthesizing", len(jobs)) as bar: ... bar.advance()``
    """

    def __init__(self, description: str, total: int, console: Console | None = None) -> None:
        console = console or get_console()
        self.description, self.total, self.done = description, total, 0
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn())
        self._progress = Progress(*columns, console=console, disable=not console.is_terminal)
        self._lock = threading.Lock()

    def __enter__(self) -> Bar:
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._progress.update(self._task, completed=self.done)

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()


def track(items: Sequence[T], description: str, console: Console | None = None) -> Iterator[T]:
    """``items`` one by one under a ``Bar``."""
    with Bar(description, len(items), console) as bar:
        for item in items:
            yield item
            bar.advance()


class ProgressBar(RichProgressBar):
    """``RichProgressBar`` whose title is ``Epoch {e}`` when the run has no epoch limit
    (``max_epochs`` -1: step-limited or unlimited) and ``Epoch {e}/{last}`` otherwise, and
    which shows the training loss as of the last logging step (``log_every_n_steps``): the
    step reads no value from the device in between (Lightning turns its progress-bar values
    into numbers after every batch, so ``train_loss`` is not one)."""

    LOSS = "train_loss"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._train_loss: float | None = None

    def get_metrics(self, trainer, pl_module) -> dict:
        items = super().get_metrics(trainer, pl_module)
        # Lightning's own test for "this step logs"; the value is the step's, as it is logged
        if trainer.training and trainer._logger_connector.should_update_logs:
            value = trainer.callback_metrics.get(f"{self.LOSS}_step")
            if value is not None:
                self._train_loss = float(value)
        if self._train_loss is not None:
            items[self.LOSS] = self._train_loss
        return items

    def _get_train_description(self, current_epoch: int) -> str:
        max_epochs = self.trainer.max_epochs
        if max_epochs is not None and max_epochs >= 0:
            return super()._get_train_description(current_epoch)
        description = f"Epoch {current_epoch}"
        # padded as Lightning pads it, so that the title does not flicker against "Validation"
        return f"{description:{len(self.validation_description)}}"


class ModelSummary(RichModelSummary):
    """Lightning's rich model summary (its default where rich is installed, as it is with
    vecset) without the FLOPs column and total."""

    def summarize(self, summary_data: list[tuple[str, list[str]]], total_parameters: int,
                  trainable_parameters: int, model_size: float, total_training_modes: dict[str, int],
                  total_flops: int, **summarize_kwargs: Any) -> None:
        columns = [(name, values) for name, values in summary_data if name != FLOPS]
        table = Table(header_style=summarize_kwargs.get("header_style", "bold magenta"))
        for name, _ in columns:  # styled and justified as in Lightning's RichModelSummary
            table.add_column(name, justify="left" if name in (" ", "Name", "Type", "Mode") else "right",
                             style={" ": "dim", "In sizes": "white", "Out sizes": "white"}.get(name),
                             no_wrap=name == "Name")
        for row in zip(*(values for _, values in columns), strict=True):
            table.add_row(*row)
        grid = Table.grid(expand=True)
        grid.add_column()
        for label, value in (
                ("Trainable params", get_human_readable_count(int(trainable_parameters))),
                ("Non-trainable params", get_human_readable_count(int(total_parameters - trainable_parameters))),
                ("Total params", get_human_readable_count(int(total_parameters))),
                ("Total estimated model params size (MB)", get_formatted_model_size(model_size)),
                ("Modules in train mode", total_training_modes["train"]),
                ("Modules in eval mode", total_training_modes["eval"])):
            grid.add_row(f"[bold]{label}[/]: {value}")
        console = get_console()
        console.print(table)
        console.print(grid)
