"""The docs site builds offline with no warnings (``mkdocs build --strict``), and its API page
holds the public classes' docstrings."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="mkdocs / mkdocstrings[python] not installed: pip install -e '.[docs]' (the [dev] extra includes it)",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    # strict: a broken link, a missing anchor or an API name griffe cannot resolve fails here
    return build_docs.build(tmp_path_factory.mktemp("site"), strict=True)


def test_every_guide_becomes_a_page(site):
    assert (site / "index.html").exists()  # the README is the home page
    for guide in (ROOT / "docs").glob("*.md"):
        assert (site / "docs" / guide.stem / "index.html").exists(), guide.name


def test_api_page_documents_the_public_classes_from_their_docstrings(site):
    html = (site / "docs" / "api" / "index.html").read_text()
    for name in ("vecset.backbone.VectorSet", "vecset.backbone.Backbone", "vecset.encoders.SpeechEncoder",
                 "vecset.heads.LabelingHead", "vecset.heads.SequenceHead", "vecset.pipelines.TaskModule",
                 "vecset.pipelines.MultiTaskModule", "vecset.pipelines.MoleculeDataModule"):
        assert f'id="{name}"' in html, name
    # a docstring's own words, not just the name: the first line of Backbone's docstring
    import vecset

    first_line = vecset.Backbone.__doc__.strip().splitlines()[0]
    words = re.sub(r"[`*]", "", first_line).split()[:4]
    text = re.sub(r"<[^>]+>", "", html)
    assert " ".join(words) in re.sub(r"\s+", " ", text), words


def test_guides_link_to_their_json_and_the_links_resolve_in_the_site(site):
    html = (site / "docs" / "speech" / "index.html").read_text()
    targets = re.findall(r'href="([^"#]*speech_baselines\.json)"', html)
    assert targets, "docs/speech.md should link its results to bench/results/speech_baselines.json"
    assert (site / "docs" / "speech" / targets[0]).resolve().exists()


def test_code_blocks_are_highlighted_at_build_time_and_scroll_sideways(site):
    html = (site / "docs" / "speech" / "index.html").read_text()
    # a fenced ```bash block (speech.md's first) becomes a Pygments-highlighted <pre>, not inline code
    blocks = re.findall(r'<div class="highlight"><pre>(.*?)</pre></div>', html, re.S)
    assert blocks and '<span class="c1"># self-attention' in blocks[0]  # a comment token: bash highlighted
    assert "```" not in html and "hljs" not in html  # no fence left as text; no highlight.js from a CDN
    css = (site / "css" / "code.css").read_text()
    assert ".highlight .k " in css and "overflow-x: auto" in css
    assert 'href="../../css/code.css"' in html
