"""A config's errors as one first line that names the setting and the reason.

jsonargparse (under LightningCLI) reports a class whose constructor raised, and a nested key it
rejected, inside its "Does not validate against any of the Union subtypes" dump: a traceback or
the usage text, then every subtype it tried, the whole given value, the reason somewhere in
between. Here the reason is found and put first:

- ``constructor_error``: a constructor that raised while the config was instantiated, e.g.
  ``model.init_args.backbone (vecset.backbone.Backbone): d_model=64 must be divisible by heads=5``.
  The object's config path is read from jsonargparse's frames in the exception's traceback (the
  action being instantiated, ``model`` then ``backbone``), the class from ``adapt_class_type``'s.
- ``parse_error``: a key or value rejected while parsing, e.g.
  ``model.init_args.backbone.init_args: Option 'dpeth' is not accepted (vecset.backbone.Backbone;
  did you mean 'depth'?)``, read from the nested message (``Parser key "..."`` / ``Problem with
  given class_path '...'``).

Either gives None when it cannot tell, and the caller keeps jsonargparse's own report.
``JSONARGPARSE_DEBUG=true`` (jsonargparse's switch) keeps the full traceback.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from pydoc import locate
from types import FrameType
from typing import Any

DEBUG_ENV = "JSONARGPARSE_DEBUG"


class SettingError(ValueError):
    """A setting found wrong once the run has started, not when the config was built (e.g.
    ``model.init_from``'s checkpoint, read when a fit starts from scratch): its message names the
    setting first, and ``vecset`` prints it as one ``error:`` line (exit 2), like a constructor's."""


class MissingSettingFile(SettingError, FileNotFoundError):
    """A file a setting names does not exist (a ``FileNotFoundError`` too)."""


def debug_mode() -> bool:
    """jsonargparse's debug switch is on (``JSONARGPARSE_DEBUG=true``): its tracebacks unchanged."""
    return os.environ.get(DEBUG_ENV, "").lower() == "true"


def _chain(ex: BaseException) -> list[BaseException]:
    """``ex`` and the exceptions it was raised from, outermost first."""
    out: list[BaseException] = []
    while ex is not None and all(ex is not e for e in out):
        out.append(ex)
        ex = ex.__cause__ or (None if ex.__suppress_context__ else ex.__context__)
    return out


def _frames(ex: BaseException) -> Iterator[tuple[FrameType, int]]:
    tb = ex.__traceback__
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _in_jsonargparse(frame: FrameType) -> bool:
    return str(frame.f_globals.get("__name__", "")).startswith("jsonargparse")


@dataclass
class ConstructorError:
    """A constructor that raised during instantiation: where in the config, which class, what."""

    path: str  # e.g. model.init_args.backbone ("" when not found)
    cls: str  # its class_path, e.g. vecset.backbone.Backbone
    error: BaseException
    where: str  # file:line of the raise, relative to the working directory when inside it

    def lines(self) -> list[str]:
        head = f"{self.path} ({self.cls})" if self.path else self.cls
        message = str(self.error).strip() or type(self.error).__name__
        first, *rest = message.splitlines()
        # a long message's first lines only (the reason comes first), then where it was raised
        return [f"{head}: {first}", *[f"  {r}" for r in rest[:3]],
                f"  ({type(self.error).__name__} raised at {self.where}; {DEBUG_ENV}=true shows the traceback)"]


def constructor_error(ex: BaseException, config: Any = None) -> ConstructorError | None:
    """The constructor failure inside jsonargparse's instantiation error ``ex``, or None when
    ``ex`` is not one (then the caller re-raises it). ``config``: the parsed config the objects
    were built from, to name the entry of a list or dict (``trainer.callbacks[1]``,
    ``model.init_args.heads.mean``)."""
    chain = _chain(ex)
    # the exception that left the constructor: the innermost one whose traceback still passes
    # through jsonargparse's adapt_class_type (what the constructor itself raised from has none)
    own = next((e for e in reversed(chain) if any(f.f_code.co_name == "adapt_class_type" for f, _ in _frames(e))),
               None)
    if own is None:
        return None
    frames: list[tuple[FrameType, int]] = []
    for e in chain[:chain.index(own) + 1]:  # outer to inner; a catching frame repeats once
        for f, line in _frames(e):
            if not any(f is g for g, _ in frames):
                frames.append((f, line))
    builds = [i for i, (f, _) in enumerate(frames) if f.f_code.co_name == "adapt_class_type" and _in_jsonargparse(f)]
    last = builds[-1]
    # the class's own call, not a nested instantiation that failed inside jsonargparse
    if not any(f.f_code.co_name == "call_without_instantiate_context" for f, _ in frames[last + 1:]):
        return None
    cls = frames[last][0].f_locals.get("val_class")
    if not isinstance(cls, type):
        return None
    given = frames[last][0].f_locals.get("value")  # the config's entry: its class_path as the user wrote it
    class_path = getattr(given, "get", lambda k: None)("class_path")
    name = class_path if isinstance(class_path, str) else _name(cls)
    keys = [f.f_locals["self"].dest for f, _ in frames[:last]
            if f.f_code.co_name == "instantiate_classes" and _in_jsonargparse(f) and hasattr(f.f_locals.get("self"), "dest")]
    path = ".init_args.".join(keys)
    if path and config is not None:
        path += _entry(config, path, name)
    raised, line = list(_frames(own))[-1]
    return ConstructorError(path, name, own, _where(raised, line))


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _entry(config: Any, path: str, cls: str) -> str:
    """Which entry of a list or dict at ``path`` (trainer.callbacks, a multi-task model's heads)
    is the one ``cls`` object in it: ``[i]`` or ``.name``; "" when not one."""
    try:
        value = config
        for key in path.split("."):
            value = value[key]
    except (KeyError, TypeError, AttributeError):
        return ""
    items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else ()
    hits = [k for k, v in items if getattr(v, "get", lambda k: None)("class_path") == cls]
    if len(hits) != 1:
        return ""
    return f"[{hits[0]}]" if isinstance(value, list) else f".{hits[0]}"


def _where(frame: FrameType | None, line: int) -> str:
    if frame is None:
        return "?"
    path = Path(frame.f_code.co_filename)
    try:
        path = path.relative_to(Path.cwd())
    except ValueError:
        pass
    parts = path.parts
    if "vecset" in parts:  # the package's own files, by their path in the repository
        path = Path(*parts[parts.index("vecset"):])
    return f"{path}:{line}"


_KEY = re.compile(r'Parser key "([^"]+)"(?: element (\d+))?:')
_CLASS = re.compile(r"Problem with given class_path '([^']+)':")
_SKIP = ("Does not validate against any of the Union subtypes", "Subtypes:", "Errors:")


def parse_error(message: str) -> str | None:
    """jsonargparse's parse error ``message`` as one line: a nested key's full config path, the
    reason and the class it belongs to (or the message itself when it is one line already); None
    when it cannot tell."""
    path: list[str] = []
    cls = None
    nested = False  # the next key is an init_arg of ``cls``
    subtypes, given = None, None  # the last key's Union: its types and the value given
    lines = message.splitlines()
    for i, raw in enumerate(lines):
        line = raw.strip()
        if line.startswith("Subtypes:") and path:
            subtypes = line.removeprefix("Subtypes:").strip()
            given = next((g.strip().removeprefix("Given value:").strip() for g in lines[i + 1:]
                          if g.strip().startswith("Given value:")), None)
            continue
        if line.startswith("- "):
            line = line[2:]  # an item of a Union's error list: the first one that is not None's is taken
            if line.startswith("Expected a <class 'NoneType'>"):
                continue
        if not line or line.startswith(_SKIP):
            continue
        if m := _KEY.fullmatch(line):
            key = m[1] + (f"[{int(m[2]) - 1}]" if m[2] else "")
            path.append(f"init_args.{key}" if nested else key)
            nested, subtypes, given = False, None, None
            continue
        if m := _CLASS.fullmatch(line):
            cls, nested = m[1], True
            continue
        if not path:
            # one line needs no rewording (e.g. "Subcommand 'fit' does not accept option 'trainer.max_epoch'")
            return message.strip() if len(message.strip().splitlines()) == 1 else None
        if nested and locate(cls) is None:  # the class itself is what was not found
            return f"{'.'.join(path)}.class_path: {line}"
        where = ".".join(path) + (".init_args" if nested else "")
        if cls and (m := re.fullmatch(r"Unable to load config '(.*)'", line)):  # a plain value for an option group
            keys = _group_keys(cls, path[-1].rpartition(".")[2])
            line = f"expected a mapping{f' of {keys}' if keys else ''} (an option group); got {m[1]}"
        return f"{where}: {_expected(line, subtypes, given)}" + (f" ({cls}{_did_you_mean(line, cls)})" if cls else "")
    return None


# how a message names a value of each plain type (as YAML and the command line write it)
_TYPE_WORDS = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string",
               "NoneType": "null", "dict": "a mapping", "list": "a list"}


def _type_words(t: str) -> str:
    """One type of jsonargparse's message (``<class 'bool'>``, ``typing.Literal['auto']``,
    ``list[int]``) as the values it accepts: ``true or false``, ``'auto'``, ``a list of int``."""
    t = t.strip()
    if m := re.fullmatch(r"<class '([\w.]+)'>", t):
        name = m[1].rsplit(".", 1)[-1]
        return _TYPE_WORDS.get(name, f"a {name}")
    if m := re.fullmatch(r"typing\.Literal\[(.*)\]", t):
        return " or ".join(_top_level(m[1]))
    if m := re.fullmatch(r"(?:typing\.)?(?:list|List|tuple|Tuple|Sequence|typing\.Sequence)\[(.*)\]", t):
        return f"a list of {m[1]}"
    return t


def _top_level(text: str) -> list[str]:
    """``text`` split at its commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()] if text.strip() else parts


def _expected(line: str, subtypes: str | None, given: str | None) -> str:
    """jsonargparse's "Expected a <class 'bool'>" as the values a setting takes: every type of
    its Union (``on_device``: true or false, or 'auto'), where it showed only the first one or a
    typing repr; other reasons as they are."""
    if subtypes is not None and subtypes.startswith("[") and line.startswith("Expected a "):
        words = [_type_words(t) for t in _top_level(subtypes[1:-1])]
        listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + ", or " + words[-1]
        return f"expected {listed}" + (f"; got {given}" if given is not None else "")
    if m := re.fullmatch(r"Expected a (.+?)(?:\. Got value: (.*))?", line):
        return f"expected {_type_words(m[1])}" + (f"; got {m[2]}" if m[2] is not None else "")
    return line


def _group_keys(cls: str, name: str) -> str:
    """The keys of ``cls``'s option group ``name`` (a dataclass default), for the message; "" if
    it is not one."""
    try:
        default = inspect.signature(locate(cls)).parameters[name].default
    except (KeyError, TypeError, ValueError):
        return ""
    return ", ".join(f.name for f in fields(default)) if is_dataclass(default) else ""


def _did_you_mean(line: str, cls: str) -> str:
    """For an argument ``cls`` does not take, the closest one it does (difflib), if any."""
    m = re.fullmatch(r"Option '([^']+)' is not accepted", line)
    target = locate(cls)
    if m is None or not isinstance(target, type):
        return ""
    try:
        names = [n for n in inspect.signature(target).parameters if n not in ("args", "kwargs")]
    except (TypeError, ValueError):
        return ""
    close = difflib.get_close_matches(m[1], names, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""
