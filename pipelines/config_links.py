"""Values a config gives once (docs/configs.md#linked-values).

Some settings must agree: the model width (the backbone's ``d_model`` is the width every
encoder returns and every head and decoder reads) and what a data module declares its model
takes from it (``VecsetDataModule.model_links``; speech: the feature count, the data's
``features.num_mel_bins`` or ``num_ceps`` for MFCC, is the encoder's ``in_dim``, and the phone set's
label count the labeling head's ``num_classes``). The CLI links them with jsonargparse's
``link_arguments`` (applied at parse, before anything is built), e.g.:

    model.init_args.backbone.init_args.d_model  -> the encoder's, the head's and the head's decoder's d_model
    data.init_args.features.num_mel_bins (num_ceps) -> model.init_args.encoder.init_args.in_dim (speech)
    data.init_args.phone_set                    -> model.init_args.head.init_args.num_classes   (speech)

The data's links are those of the data class the config names (its files, or ``--data``).

and the same per task of a ``MultiTaskModule`` (``encoders.<task>``, ``heads.<task>``,
``data.init_args.tasks.<task>``). A link applies only where both ends exist in the config (a
backbone without ``d_model`` such as ``torch.nn.Identity``, or data without a phone set,
leave the target as the config gives it).

A config may still give a linked value, for clarity: where it differs from the source, parsing
stops with one line naming both keys and both values (``LinkConflict``), before any class is
built. jsonargparse alone would take the source's value silently. A target left out of the
config where its class has a default (``TransformerDecoder(d_model=64)``) holds that default
when the link runs; such a value counts as not given.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vecset.pipelines.data.base import ModelLink, VecsetDataModule

DOCS = "docs/configs.md#linked-values"


class LinkConflict(ValueError):
    """A config gives a linked value that differs from its source."""


class LinkSourceError(LinkConflict):
    """A link's sources cannot give its value (e.g. the data's files that hold it cannot be
    read); reported as the CLI reports a conflict: one line naming the sources and the reason."""


@dataclass(frozen=True)
class Link:
    """``target`` (a key, as on the command line) takes its value from ``sources``.

    Args:
        what: what the value is, for the message ("model width").
        sources: the keys it is computed from.
        target: the key it is written to.
        compute: source values -> (the value, the key it comes from and that key's value as the
            message shows it).
    """

    what: str
    sources: tuple[str, ...]
    target: str
    compute: Callable[..., tuple[Any, str, str]]


def _first(key: str) -> Callable[[Any], tuple[Any, str, str]]:
    return lambda value: (value, key, str(value))


def data_class(class_path: Any) -> type[VecsetDataModule] | None:
    """The data module class a config names (a class path, or a name ``vecset.pipelines``
    exports, as jsonargparse takes it); None when it is not a ``VecsetDataModule`` or cannot be
    imported (the parser reports that)."""
    name = str(class_path)
    module, _, cls = (name if "." in name else f"vecset.pipelines.{name}").rpartition(".")
    try:
        found = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError, ValueError):
        return None
    return found if isinstance(found, type) and issubclass(found, VecsetDataModule) else None


def _data_link(link: ModelLink, data: str, encoder: str, head: str) -> Link:
    """A data module's declared link, with the keys of one task's data and model parts. A value
    of the data class itself (no sources) follows the data's ``class_path``."""
    def compute(*values: Any) -> tuple[Any, str, str]:
        value, arg, shown = link.compute(*values[:len(link.sources)])
        return value, f"{data}.{arg}" if arg == "class_path" else f"{data}.init_args.{arg}", shown

    part = encoder if link.part == "encoder" else head
    sources = tuple(f"{data}.init_args.{s}" for s in link.sources) or (f"{data}.class_path",)
    return Link(link.what, sources, f"{part}.init_args.{link.name}", compute)


def task_links(encoder: str, head: str, data: str, width: str, data_cls: type[VecsetDataModule] | None = None,
               ) -> list[Link]:
    """One task's links: ``encoder``, ``head`` and ``data`` are the keys of its encoder, its
    head and its data module (``model.init_args.encoder``, ...), ``width`` the width's source;
    ``data_cls`` the data module class the config names, whose declared ``model_links`` join
    (e.g. speech's feature count and phone classes)."""
    d_model = "init_args.d_model"
    links = [Link("model width", (width,), f"{part}.{d_model}", _first(width))
             for part in (encoder, head, f"{head}.init_args.decoder")]
    if data_cls is not None:
        links += [_data_link(link, data, encoder, head) for link in data_cls.model_links()]
    return links


def single_task_links(data_cls: type[VecsetDataModule] | None = None) -> list[Link]:
    """TaskModule's: model.init_args.{encoder, backbone, head} and the data (of class ``data_cls``)."""
    m = "model.init_args"
    return task_links(f"{m}.encoder", f"{m}.head", "data", f"{m}.backbone.init_args.d_model", data_cls)


def multi_task_links(tasks: Iterable[str], data_classes: dict[str, type[VecsetDataModule] | None] | None = None,
                     ) -> list[Link]:
    """MultiTaskModule's, per task: model.init_args.{encoders, heads}.<task> and
    data.init_args.tasks.<task> (of class ``data_classes[task]``), with the one shared backbone's width."""
    m, classes = "model.init_args", data_classes or {}
    return [link for t in tasks for link in task_links(f"{m}.encoders.{t}", f"{m}.heads.{t}", f"data.init_args.tasks.{t}",
                                                       f"{m}.backbone.init_args.d_model", classes.get(t))]


def data_class_paths(cfg: Any) -> dict[str, Any]:
    """The data class paths a plain config names: ``""`` -> the data's, ``<task>`` -> a
    multi-task data's task's."""
    data = cfg.get("data") if isinstance(cfg, dict) else None
    if not isinstance(data, dict):
        return {}
    found = {"": data["class_path"]} if isinstance(data.get("class_path"), str) else {}
    tasks = (data.get("init_args") or {}).get("tasks") if isinstance(data.get("init_args"), dict) else None
    for task, sub in (tasks or {}).items() if isinstance(tasks, dict) else ():
        if isinstance(sub, dict) and isinstance(sub.get("class_path"), str):
            found[str(task)] = sub["class_path"]
    return found


def config_links(cfg: dict) -> list[Link]:
    """The links of a plain config (``filled``'s): one task's, or each task's of a multi-task
    model, with the data classes it names."""
    classes = {k: data_class(v) for k, v in data_class_paths(cfg).items()}
    init = ((cfg.get("model") or {}).get("init_args") or {}) if isinstance(cfg.get("model"), dict) else {}
    tasks = [str(t) for t in (init.get("encoders") or {})] if isinstance(init.get("encoders"), dict) else []
    return single_task_links(classes.get("")) + multi_task_links(tasks, classes)


def signature_param(class_path: Any, name: str) -> inspect.Parameter | None:
    """``class_path``'s ``__init__`` argument ``name`` (None when it has none or the class
    cannot be imported)."""
    try:
        module, _, cls = str(class_path).rpartition(".")
        return inspect.signature(getattr(importlib.import_module(module), cls)).parameters.get(name)
    except (ImportError, AttributeError, ValueError, TypeError):
        return None


def signature_default(class_path: Any, name: str) -> Any:
    """The default of ``class_path``'s ``__init__`` argument ``name`` (``inspect.Parameter.empty``
    when it has none); ``group.field``: a field of an option group's default (a dataclass)."""
    first, *fields = name.split(".")
    param = signature_param(class_path, first)
    value = inspect.Parameter.empty if param is None else param.default
    for field in fields:
        value = getattr(value, field, inspect.Parameter.empty)
    return value


def checked(link: Link) -> Callable[..., Any]:
    """The link's compute_fn: its sources, then the target's class_path and the target's value
    as the config gave it (jsonargparse passes them in that order) -> the linked value, or a
    ``LinkConflict`` naming both keys and both values."""
    parent, _, name = link.target.rpartition(".init_args.")

    def apply(*values: Any) -> Any:
        *sources, class_path, given = values
        try:
            value, source, shown = link.compute(*sources)
        except (OSError, ValueError) as ex:  # a data's link may read its files (their header)
            raise LinkSourceError(f"{' / '.join(link.sources)}: {ex} (read for the {link.what}, "
                                  f"{link.target})") from ex
        if value is None:  # the data cannot tell before setup: the config's value, checked there
            return given
        not_given = given is None or given == signature_default(class_path, name)
        if not not_given and given != value:
            if source.endswith(".class_path"):  # a value of the data class: nothing to give
                data = str(sources[0]).rpartition(".")[2]
                raise LinkConflict(f"{link.what} given twice: {link.target}={given} but the data, {data} "
                                   f"({source}), has {shown}; leave {link.target} out (it follows the data: {DOCS})")
            raise LinkConflict(f"{link.what} given twice: {link.target}={given} but {source}={shown}; give it "
                               f"once, at {source} (the other follows it: {DOCS})")
        return value

    apply.__name__ = f"link_{name}"
    return apply


def add_links(parser: Any, links: Sequence[Link]) -> None:
    """Add ``links`` to ``parser`` (a LightningArgumentParser); a link to a target the parser
    links already is left as it is (the CLI may add a multi-task config's links again)."""
    have = {a.target[0] for a in getattr(parser, "_links_group", None)._group_actions} \
        if hasattr(parser, "_links_group") else set()
    for link in links:
        if link.target in have:
            continue
        class_path = link.target.rpartition(".init_args.")[0] + ".class_path"
        parser.link_arguments((*link.sources, class_path, link.target), link.target, compute_fn=checked(link))


def link_conflict(ex: BaseException | None) -> LinkConflict | None:
    """The LinkConflict behind ``ex`` (jsonargparse wraps it), if any."""
    seen = set()
    while ex is not None and id(ex) not in seen:
        if isinstance(ex, LinkConflict):
            return ex
        seen.add(id(ex))
        ex = ex.__cause__ or ex.__context__
    return None


def config_paths(argv: Sequence[str]) -> list[Path]:
    """The ``--config``/``-c`` files on a command line, in order."""
    paths = []
    for i, a in enumerate(argv):
        if a in ("--config", "-c") and i + 1 < len(argv):
            paths.append(Path(argv[i + 1]))
        elif a.startswith("--config="):
            paths.append(Path(a.split("=", 1)[1]))
    return paths


def multi_task_names(argv: Sequence[str]) -> list[str]:
    """The task names a command line's config files give a MultiTaskModule (the keys of
    ``model.init_args.encoders`` and ``heads``), for their links: jsonargparse links name fixed
    keys, and a multi-task config chooses its own task names."""
    names: list[str] = []
    for path in config_paths(argv):
        try:
            cfg = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError):
            continue  # the parser reports it
        init = ((cfg or {}).get("model") or {}).get("init_args") or {} if isinstance(cfg, dict) else {}
        for key in ("encoders", "heads"):
            part = init.get(key) if isinstance(init, dict) else None
            if isinstance(part, dict):
                names += [str(t) for t in part if str(t) not in names]
    return names


def data_classes(argv: Sequence[str]) -> dict[str, type[VecsetDataModule] | None]:
    """The data module classes a command line names (its config files, then ``--data`` /
    ``--data.class_path``): ``""`` -> the data's, ``<task>`` -> a multi-task data's task's."""
    paths: dict[str, Any] = {}
    for path in config_paths(argv):
        try:
            paths.update(data_class_paths(yaml.safe_load(path.read_text())))
        except (OSError, yaml.YAMLError):
            continue  # the parser reports it
    for i, a in enumerate(argv):
        for flag in ("--data", "--data.class_path"):
            if a == flag and i + 1 < len(argv):
                paths[""] = argv[i + 1]
            elif a.startswith(flag + "="):
                paths[""] = a.split("=", 1)[1]
    return {k: data_class(v) for k, v in paths.items()}


def argv_of(args: Any) -> list[str]:
    """The command line LightningCLI parses (``args``, or the process's own)."""
    if args is None:
        return sys.argv[1:]
    return [str(a) for a in args] if isinstance(args, (list, tuple)) else []


def unset_target(cfg: Any, links: Sequence[Link]) -> str | None:
    """A message for the first link target that is still unset after parsing although its
    class needs it (its link did not apply: the config lacks the source, e.g. a VectorEncoder's
    in_dim with data that has no num_mel_bins); None when there is none. ``cfg`` is one
    subcommand's parsed namespace."""
    for link in links:
        parent, _, name = link.target.rpartition(".init_args.")
        try:
            class_path, value = cfg.get(f"{parent}.class_path"), cfg.get(link.target)
        except (KeyError, AttributeError, TypeError):
            continue
        if class_path is None or value is not None:
            continue
        param = signature_param(class_path, name)
        if param is not None and param.default is inspect.Parameter.empty:
            try:  # the source is there but cannot tell it (an image folder that is not there)
                _, source, shown = link.compute(*(cfg.get(s) for s in link.sources))
            except Exception:  # noqa: BLE001 - the source is not there: the message below says so
                source = None
            if source is not None and cfg.get(source) is not None:
                return (f"{link.target} is not set: {class_path.rpartition('.')[2]} needs it, and {source}="
                        f"{shown} does not tell it (the {link.what}; give the source a value that does: {DOCS})")
            return (f"{link.target} is not set: {class_path.rpartition('.')[2]} needs it (it follows "
                    f"{' / '.join(link.sources)} where the config has that: {DOCS})")
    return None


def filled(cfg: dict, links: Sequence[Link] | None = None) -> dict:
    """A copy of the plain config ``cfg`` (``{"model": {"class_path": ..., "init_args": ...},
    "data": ...}``) with each link's target filled in from its sources (``links``; None: the
    config's own, ``config_links``), as the CLI does at parse,
    for code that builds a config's classes without the CLI (``bench/ablations.py``). A source
    the config leaves out takes its class's default; a target already set is kept; a link whose
    target's class is not in the config is skipped."""
    out = copy.deepcopy(cfg)
    links = config_links(cfg) if links is None else links
    missing = object()

    def node(key: str) -> tuple[Any, str]:
        *parents, leaf = key.split(".")
        d: Any = out
        for p in parents:
            d = d.get(p) if isinstance(d, dict) else None
        return d, leaf

    for link in links:
        values = []
        for src in link.sources:
            parent, leaf = node(src)
            value = parent.get(leaf, missing) if isinstance(parent, dict) else missing
            if value is missing:  # the class's default (of an option group's field: ``features.max_dist``)
                owner_key, _, arg = src.rpartition(".init_args.")
                owner, _ = node(owner_key + ".class_path")
                owner_path = owner.get("class_path") if isinstance(owner, dict) else None
                value = signature_default(owner_path, arg) if owner_path else missing
            if value is missing or value is inspect.Parameter.empty:
                break
            values.append(value)
        else:
            parent, leaf = node(link.target)
            holder, _ = node(link.target.rsplit(".init_args.", 1)[0] + ".class_path")
            if not (isinstance(holder, dict) and "class_path" in holder):
                continue
            if signature_param(holder["class_path"], leaf) is None:
                continue
            if not isinstance(parent, dict):
                holder["init_args"] = parent = dict(holder.get("init_args") or {})
            value = link.compute(*values)[0]
            if value is not None:  # None: the data cannot tell before setup
                parent.setdefault(leaf, value)
    return out
