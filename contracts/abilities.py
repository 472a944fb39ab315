"""Optional abilities a model part declares: small protocols, checked with ``isinstance``.

Every encoder, backbone and head follows its contract (``Encoder``, ``Head``; the backbone maps
a VectorSet to one). Some parts can do more, and the pipelines use that when a part declares
it, instead of asking for attributes by name:

- ``ReceptiveField``: an encoder or head whose output vector reads a bounded number of input
  vectors on each side (``receptive_field``, an int); ``WindowedReceptiveField``: a
  backbone's, given the window an encoder sets (``SetsWindow``). Chunked predict relies on them.
- ``Width``: a backbone's declared width ``d_model`` (checked against the encoder and head).
- ``Grid``: an image encoder's grid of vectors for an image of H x W pixels; ``ImageSides``:
  which image sides it takes (export makes them dynamic axes).
- ``MaxSetSize``: an encoder whose sets may hold at most ``max_set_size`` vectors (a learned
  positional table's length; export bounds the set-size axis by it).
- ``Tokenizes``: an encoder that reads strings and can give their token ids instead (export:
  the tokenizer stays in Python, the graph reads the ids).
- ``NotExported``: a part that an exported graph cannot hold (``export_refusal``: why, and
  what to do instead); export refuses it before reading any data.
- ``AttentionWeights``: a backbone whose blocks' attention can be read (plots, the set-size
  check): ``capture_attention``, ``attention_weights``, its ``blocks`` (each an ``attn`` with
  ``heads`` and ``window``) and ``cls`` (the CLS vector's parameter, or None).
- ``PoolingWeights``: a head that pools by a learned query and keeps the last forward's
  weights over the vectors (``pooling``, ``last_pool_weights`` (B, N)).
- ``Decoder``: a head whose per-vector outputs a segment decoder turns into runs of labels
  (``segment_decoder()``, None when it has none).
- ``DecodeSettings``: a head class's decode-only constructor arguments (a checkpoint may be
  used with other values of them).
- ``MeanStd`` and ``TaskKind``: a head that says whether it classifies or regresses
  (``task``) and gives a mean and a std in target units (``mean_std``).

The protocols are structural (``typing.runtime_checkable``): a part declares an ability by
having its members, nothing is registered. ``isinstance`` checks that the members exist, not
their signatures; the docstrings say what each must be. From Python 3.12 ``isinstance`` looks
the members up statically (``inspect.getattr_static``), and ``nn.Module`` keeps submodules and
parameters out of the instance's ``__dict__``: a protocol therefore lists only members found
that way (methods, properties, plain attributes), and names module-held ones (``blocks``,
``cls``) in its docstring (tests/backbone/test_abilities.py checks every shipped config).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn

from vecset.contracts.vectorset import VectorSet


@runtime_checkable
class ReceptiveField(Protocol):
    """An encoder or head: ``receptive_field`` (an int, a property or class attribute) input
    vectors on each side one output vector depends on."""

    receptive_field: int


@runtime_checkable
class WindowedReceptiveField(Protocol):
    """A backbone: ``receptive_field(window)`` positions on each side one output depends on,
    given the window the encoder sets (None: the blocks' own); None when unbounded."""

    def receptive_field(self, window: int | None = None) -> int | None: ...


@runtime_checkable
class SetsWindow(Protocol):
    """An encoder that chooses the attention window of its sets (``window``, None: the blocks')."""

    window: int | None


@runtime_checkable
class Width(Protocol):
    """A backbone whose vectors have the declared width ``d_model`` in and out."""

    d_model: int


@runtime_checkable
class Grid(Protocol):
    """An image encoder: ``grid(h, w)`` -> (rows, columns) of the vectors an h x w image makes."""

    def grid(self, h: int, w: int) -> tuple[int, int]: ...


@runtime_checkable
class MaxSetSize(Protocol):
    """An encoder whose sets hold at most ``max_set_size`` vectors (a learned positional table's
    ``max_len``), None when any size will do."""

    max_set_size: int | None


@runtime_checkable
class NotExported(Protocol):
    """A part that ``vecset export`` refuses: ``export_refusal`` (a class attribute, one line)
    names the part, says why an exported graph cannot hold it and what to do instead."""

    export_refusal: str


@runtime_checkable
class ImageSides(Protocol):
    """An image encoder that takes images of many sizes: ``image_sides()`` -> a dict with
    ``multiple_of`` (pixels a vector covers a side, P: the sides must be multiples of it
    unless ``pad``), ``pad`` (a side that is not a multiple is zero-padded up to one) and
    ``max_height`` / ``max_width`` (pixels; a learned positional table's size; None: any)."""

    def image_sides(self) -> dict[str, Any]: ...


@runtime_checkable
class Tokenizes(Protocol):
    """An encoder that reads strings and also takes their token ids: ``tokenized(batch)`` ->
    the batch with the strings replaced by ids (B, N) long under ``"tokens"`` (padded with the
    pad id), which ``forward`` then reads; ``tokenizer()`` -> what a server needs to make the
    ids itself (a JSON-ready dict: the vocabulary in id order, the pad and unknown ids, how text
    is split)."""

    def tokenized(self, batch: dict) -> dict: ...

    def tokenizer(self) -> dict[str, Any]: ...


@runtime_checkable
class AttentionWeights(Protocol):
    """A backbone with readable attention.

    ``capture_attention(layer)`` is a context in which block ``layer`` keeps its weights (it
    yields ``get(queries=None)`` -> (B, H, Nq, N)); ``attention_weights(vs, layer, queries)``
    runs the backbone and returns them; ``blocks[i].attn`` has ``heads`` and ``window``;
    ``cls`` is the CLS vector's parameter (prepended to every set), or None. ``blocks`` and
    ``cls`` are held by ``nn.Module`` (not in ``__dict__``), so only the two methods are checked.
    """

    def capture_attention(self, layer: int = -1) -> AbstractContextManager[Callable[..., Tensor]]: ...

    def attention_weights(self, vs: VectorSet, layer: int = -1, queries: int | None = None) -> Tensor: ...


@runtime_checkable
class PoolingWeights(Protocol):
    """A head that pools the vectors into one: ``pooling`` says how (``"attention"``: by a
    learned query, whose weights (B, N) of the last forward are ``last_pool_weights``)."""

    pooling: str
    last_pool_weights: Tensor | None


@runtime_checkable
class Decoder(Protocol):
    """A head with an optional segment decoder: ``segment_decoder()`` -> a callable from one
    set's per-vector outputs (N, C) to labels (N,), or None (the ``Head`` contract's default)."""

    def segment_decoder(self) -> Callable[[Tensor], Any] | None: ...


@runtime_checkable
class TaskKind(Protocol):
    """A head that says what it predicts: ``task`` is ``"classification"``, ``"regression"``
    (SequenceHead) or ``"labeling"`` (LabelingHead)."""

    task: str


@runtime_checkable
class MeanStd(Protocol):
    """A regression head: ``mean_std(out)`` -> mean (B, T) and std (B, T) or None, target units."""

    task: str

    def mean_std(self, out: Tensor) -> tuple[Tensor, Tensor | None]: ...


@runtime_checkable
class DecodeSettings(Protocol):
    """A head class whose constructor arguments ``decode_settings`` (a class attribute: their
    names) change how a trained model's outputs are decoded, not its weights (a checkpoint may
    be used with other values)."""

    decode_settings: tuple[str, ...]


def pools_by_attention(head: nn.Module) -> bool:
    """The head pools by a learned query and keeps its weights (``PoolingWeights``)."""
    return isinstance(head, PoolingWeights) and head.pooling == "attention"


def has_cls(backbone: nn.Module) -> bool:
    """The backbone prepends a CLS vector to every set."""
    return isinstance(backbone, AttentionWeights) and backbone.cls is not None


def regression_std(head: nn.Module) -> bool:
    """A regression head that can give a std (``MeanStd`` with ``task == "regression"``)."""
    return isinstance(head, MeanStd) and head.task == "regression"


def task_kind(head: nn.Module) -> str | None:
    """``head.task`` when the head declares one (``TaskKind``), else None."""
    return head.task if isinstance(head, TaskKind) else None
