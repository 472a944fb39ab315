"""``pipelines.console.Bar`` / ``track``: the progress bar over slow data work counts what was
done (the bar's done/total), and is quiet where the console is not a terminal."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console

from vecset.pipelines.console import Bar, track


def consoles() -> tuple[Console, Console]:
    return (Console(file=io.StringIO(), force_terminal=True, width=100),
            Console(file=io.StringIO(), force_terminal=False, width=100))


def test_bar_counts_what_was_advanced_from_threads():
    terminal, log = consoles()
    for console in (terminal, log):
        with Bar("synthesizing", 40, console) as bar:
            with ThreadPoolExecutor(max_workers=4) as ex:
                list(ex.map(lambda _: bar.advance(), range(30)))
        assert bar.done == 30
    assert "synthesizing" in terminal.file.getvalue() and "30/40" in terminal.file.getvalue()
    assert log.file.getvalue() == ""  # a log file, a test's captured output: nothing


def test_track_yields_every_item_and_counts_only_finished_ones():
    terminal, _ = consoles()
    seen = []
    for i in track([3, 1, 4, 1, 5], "featurizing m.csv", terminal):
        seen.append(i)
        if len(seen) == 3:
            break  # the loop stopped: 2 items finished, the third was handed out
    assert seen == [3, 1, 4] and "2/5" in terminal.file.getvalue()
    terminal, _ = consoles()
    assert list(track(["a", "b"], "x", terminal)) == ["a", "b"] and "2/2" in terminal.file.getvalue()
