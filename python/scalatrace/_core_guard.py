"""One net around every entry point of the compiled core: an argument it cannot take is a
one-line :class:`~scalatrace.errors.CoreArgumentError` (a ``UsageError``, also a ``TypeError``).

pybind11 refuses an argument it cannot convert (an integer beyond 64 bits such as ``10**20``, a
negative number for an unsigned count, a string for a number) with a ``TypeError`` listing every
signature and the call's arguments over several lines. No exception translator sees that error
(pybind11 raises it while choosing an overload), so :func:`install` wraps each function, method,
constructor and attribute setter of ``_core`` once, at import, and turns exactly that
``TypeError`` into one line naming the function, the argument that does not fit and what the
function takes. Every other exception passes through unchanged. Importing this module installs
the net; ``scalatrace/__init__.py`` imports it before any module that uses the core.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from . import _core
from .errors import CoreArgumentError

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
_REFUSALS = ("incompatible function arguments", "incompatible constructor arguments")
# Dunder methods whose arguments come from the caller (the rest take none, or Python's own).
_CALLER_DUNDERS = {"__init__", "__getitem__", "__setitem__", "__call__"}
# Left unwrapped: per-event accessors that take no number (a wrapper costs a Python call each,
# and the exports call them for every field of every event). A field name that is not a string
# still gets pybind11's TypeError there; an unknown name is an UnknownNameError.
_UNWRAPPED = {("RecordedEvent", "__getitem__")}
# "    1. (self: ..., rank: int) -> int", constructors "    1. scalatrace._core.RankList(ranks: ...)".
_SIGNATURE = re.compile(r"^\s*\d+\. [\w.]*\((.*)\)(?: -> .*)?$", re.MULTILINE)
# pybind11's spellings of the parameter types, and the plain names shown instead.
_TYPE_NAMES = [
    (re.compile(r"typing\.SupportsInt \| typing\.SupportsIndex"), "int"),
    (re.compile(r"typing\.SupportsFloat \| typing\.SupportsIndex"), "float"),
    (re.compile(r"\b(?:typing|collections\.abc|scalatrace\._core)\."), ""),
    (re.compile(r"\barg\d+: "), ""),
]


def _split_parameters(signature: str) -> list[str]:
    """The parameters of a pybind11 signature, split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(signature):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(signature[start:i].strip())
            start = i + 1
    if signature[start:].strip():
        parts.append(signature[start:].strip())
    return parts


def _plain(text: str) -> str:
    for pattern, name in _TYPE_NAMES:
        text = pattern.sub(name, text)
    return text


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _out_of_range(value: object) -> str | None:
    """Why an integer (or one in a list or tuple) cannot reach the core, or None if it could
    (bool is not an integer here)."""
    if isinstance(value, (list, tuple)):
        return next((why for v in value if (why := _out_of_range(v)) is not None), None)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value > _UINT64_MAX or value < _INT64_MIN:
        return "beyond 64 bits"
    if value > _INT64_MAX:
        return "beyond a signed 64-bit integer"
    return None


def _argument_name(name: str, position: int) -> str:
    """pybind11 calls unnamed parameters arg0, arg1, ...: those become "argument 1", ..."""
    return f"argument {position + 1}" if re.fullmatch(r"arg\d+", name) else name


def _translate(
    err: TypeError, name: str, args: tuple, kwargs: dict, method: bool
) -> CoreArgumentError | None:
    """The one-line error for pybind11's refusal ``err`` of ``name(*args, **kwargs)`` (``method``:
    ``args[0]`` is the instance), or None if ``err`` is not such a refusal."""
    text = str(err)
    if not any(refusal in text for refusal in _REFUSALS):
        return None
    if method:
        args = args[1:]
    # Each overload's parameters without self; the one the call was meant for is the first
    # with as many parameters as the call has arguments.
    overloads = [
        [p for p in _split_parameters(m.group(1)) if not p.startswith("self")]
        for m in _SIGNATURE.finditer(text)
    ]
    count = len(args) + len(kwargs)
    parameters = next((o for o in overloads if len(o) == count), overloads[0] if overloads else [])
    names = [_argument_name(p.split(":")[0].strip(), i) for i, p in enumerate(parameters)]
    names += [f"argument {i + 1}" for i in range(len(names), len(args))]
    takes = " or ".join("(" + _plain(", ".join(o)) + ")" for o in overloads)
    shown = list(zip(names, args)) + list(kwargs.items())
    for n, value in shown:
        why = _out_of_range(value)
        if why is not None:
            return CoreArgumentError(
                f"{name}(): {n}={_short(value)} is out of range ({why}); it takes {takes}"
            )
    hint = ""
    if any(isinstance(v, float) for _, v in shown) and "int" in takes:
        hint = " (a float where an integer is wanted?)"
    listed = ", ".join(f"{n}={_short(v)}" for n, v in shown) or "no arguments"
    return CoreArgumentError(f"{name}(): cannot take {listed}{hint}; it takes {takes}")


def _guarded(func: Callable[..., Any], name: str, method: bool = False) -> Callable[..., Any]:
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TypeError as err:
            translated = _translate(err, name, args, kwargs, method)
            if translated is None:
                raise
            raise translated from None

    call.__scalatrace_guarded__ = True  # type: ignore[attr-defined]
    return call


def _guard_class(cls: type) -> None:
    for attr, member in list(vars(cls).items()):
        skipped_dunder = attr.startswith("__") and attr not in _CALLER_DUNDERS
        if skipped_dunder or (cls.__name__, attr) in _UNWRAPPED:
            continue
        qualified = f"{cls.__name__}.{attr}"
        if isinstance(member, staticmethod):
            setattr(cls, attr, staticmethod(_guarded(member.__func__, qualified)))
        elif isinstance(member, property):
            if member.fset is not None:
                guarded_set = _guarded(member.fset, f"{cls.__name__}.{attr} (setting it)", True)
                setattr(cls, attr, property(member.fget, guarded_set, member.fdel, member.__doc__))
        elif type(member).__name__ == "instancemethod" or callable(member):
            func = getattr(member, "__func__", member)
            if getattr(func, "__scalatrace_guarded__", False):
                continue
            setattr(cls, attr, _guarded(func, qualified, method=True))


def install() -> None:
    """Wraps every function of ``_core`` and every method, constructor and setter of its classes
    (once: a second call changes nothing)."""
    if getattr(_core, "__scalatrace_guarded__", False):
        return
    for attr, member in list(vars(_core).items()):
        if attr.startswith("__"):
            continue
        if isinstance(member, type):
            _guard_class(member)
        elif callable(member):
            setattr(_core, attr, _guarded(member, attr))
    _core.__scalatrace_guarded__ = True  # type: ignore[attr-defined]


install()
