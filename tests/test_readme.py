"""The README's Python example runs as written (extracted from README.md, not copied)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_one_python_example_using_the_public_api():
    blocks = readme_python_blocks()
    assert len(blocks) == 1, f"README.md should hold one ```python block, found {len(blocks)}"
    for name in ("vecset.TaskModule", "vecset.Backbone", "trainer.fit"):
        assert name in blocks[0]


def test_readme_python_example_trains_and_tests(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(readme_python_blocks()[0], "README.md", "exec"), namespace)
    model, trainer = namespace["model"], namespace["trainer"]
    # its checkpoints go where it says (runs/ is git-ignored), nothing else into the working
    # directory (issue 60: an untracked ./checkpoints/ was left)
    assert trainer.current_epoch == 5 and (tmp_path / "runs/readme/checkpoints/last.ckpt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    # it printed the test metrics, and the model learned the task (chance is about 0.5)
    printed = capsys.readouterr().out
    assert "'test_acc'" in printed
    acc = trainer.callback_metrics["test_acc"].item()
    assert acc > 0.9, acc
    assert model.backbone.__class__.__name__ == "Backbone"
