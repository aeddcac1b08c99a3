"""Notebook parameters: parse the ``parameters`` cell and validate values before a kernel starts.

Grammar of the cell (one parameter per line, annotated assignment plus a comment)::

    eps: float = 1.0  # privacy parameter epsilon; range (0, inf); test 0.5
    K: int = 100  # number of Bernoulli trials; range [1, 100000]; test 12
    eps_grid: list[float] = [0.001, 0.002]  # eps values on the x axis; range (0, inf); test 2.0,0.5
    method: str = "exact"  # how the metric is computed; choices exact, mc; test mc
    csv_path: str = "data/example.csv"  # the records; file; test data/other.csv
    columns: list[str] = ["a", "b"]  # columns to read; names; test a
    seed: int = 1  # seed of numpy.random.default_rng; range [0, inf); test 2

The optional last clause ``test VALUE`` (written as on the command line: a comma list for a list) is the
small, fast value, different from the default, with which the test suite runs the notebook
(``tests/test_nondefault_runs.py``): each parameter is declared once, with its default, its allowed
range and its test value.

``type`` is one of ``int``, ``float``, ``bool``, ``str``, ``list[int]``, ``list[float]``, ``list[str]``; the range
applies to every element of a list; a ``str`` declared ``file`` is a file path (a relative path that names a file
from the directory the command runs in is made absolute; otherwise it is read from the notebook's folder), and
a ``str`` or ``list[str]`` declared ``names`` takes any non-empty text; ``inf`` bounds are allowed; a list must not be empty. Numbers are written
plainly (``50``, ``-1``, ``0.5``, ``1e-3``; no ``5_0``); ``nan`` is never accepted and ``inf`` only where the
range includes it explicitly (``range [0, inf]``, not ``range (0, inf)``). A comma list must not hold empty
entries (``50,``, ``,50`` and ``50,,60`` are errors).

Constraints between parameters (one list as long as another, a burn-in shorter than the chain) are
declared per notebook in :mod:`dpbayes.book.constraints` and checked, with these values, by
:func:`dpbayes.book.constraints.check` both by the run command (before a kernel starts) and by the notebook.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPPORTED_TYPES = ("int", "float", "bool", "str", "list[int]", "list[float]", "list[str]")
_RANGE_RE = re.compile(r"^\s*([\[(])\s*([^,]+?)\s*,\s*([^\])]+?)\s*([\])])\s*$")
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_RE = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?inf(inity)?$", re.IGNORECASE)


class ParameterError(ValueError):
    """A parameter value or declaration is invalid; the message is one line for the user."""


@dataclass(frozen=True)
class Parameter:
    """One declared notebook parameter."""

    name: str
    type: str
    default: Any
    meaning: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = field(default_factory=tuple)
    #: ``"file"`` (a file path) or ``"names"`` (any non-empty text) for a ``str`` without choices; ``""`` otherwise.
    free: str = ""
    #: The value the test suite runs the notebook with (command-line text), or ``None`` if not declared.
    test: str | None = None

    @property
    def allowed(self) -> str:
        """Human-readable allowed set, e.g. ``(0, inf)`` or ``one of exact, mc``."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.free:
            return "a file path" if self.free == "file" else "any non-empty text"
        lo = "-inf" if self.low is None else _fmt(self.low)
        hi = "inf" if self.high is None else _fmt(self.high)
        return f"{'(' if self.low_open else '['}{lo}, {hi}{')' if self.high_open else ']'}"

    # -- conversion and validation -------------------------------------------------------
    def _scalar(self, raw: Any, kind: str) -> Any:
        where = f"parameter {self.name}"
        if kind == "int":
            if isinstance(raw, bool):
                raise ParameterError(f"{where} must be an integer, got {raw!r}")
            if isinstance(raw, int):
                return raw
            if isinstance(raw, float) and raw.is_integer():
                return int(raw)
            if isinstance(raw, str) and _INT_RE.match(raw.strip()):
                return int(raw.strip())
            raise ParameterError(f"{where} must be an integer in {self.allowed}, got {raw!r}")
        if kind == "float":
            if isinstance(raw, bool):
                raise ParameterError(f"{where} must be a number, got {raw!r}")
            if isinstance(raw, (int, float)):
                value = float(raw)
            elif isinstance(raw, str) and _FLOAT_RE.match(raw.strip()):
                value = float(raw.strip())
            else:
                raise ParameterError(f"{where} must be a number in {self.allowed}, got {raw!r}")
            if math.isnan(value):
                raise ParameterError(f"{where} must be a finite number in {self.allowed}, got nan")
            if math.isinf(value) and not self._admits_inf(value):
                raise ParameterError(f"{where} must be a finite number in {self.allowed}, got {_fmt(value)}")
            return value
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes"):
                return True
            if text in ("false", "0", "no"):
                return False
            raise ParameterError(f"{where} must be true or false, got {raw!r}")
        return str(raw).strip()

    def _admits_inf(self, value: float) -> bool:
        """Whether the declared range includes ``value`` (+-inf) explicitly: ``[0, inf]`` does, ``(0, inf)`` not."""
        if value > 0:
            return self.high is None and not self.high_open
        return self.low is None and not self.low_open

    def _check_bounds(self, value: Any) -> None:
        where = f"parameter {self.name}"
        if self.choices:
            if value not in self.choices:
                raise ParameterError(f"{where} must be {self.allowed}, got {value!r}")
            return
        if self.free:
            if not isinstance(value, str) or not value:
                raise ParameterError(f"{where} must be {self.allowed}, got {value!r}")
            return
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bad_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
            bad_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
            if bad_low or bad_high:
                raise ParameterError(f"{where} must lie in {self.allowed}, got {value!r}")

    def convert(self, raw: Any) -> Any:
        """Convert a command-line string (or a Python value) to the declared type and check it."""
        if self.type.startswith("list["):
            kind = self.type[5:-1]
            if isinstance(raw, str):
                text = raw.strip()
                if text.startswith("["):
                    try:
                        raw = json.loads(text)
                    except json.JSONDecodeError:
                        raise ParameterError(f"parameter {self.name} must be a list of {kind}, got {raw!r}") from None
                else:
                    raw = split_list(text, self.name)
            if not isinstance(raw, (list, tuple)) or len(raw) == 0:
                raise ParameterError(f"parameter {self.name} must be a non-empty list of {kind} in {self.allowed}")
            values = [self._scalar(v, kind) for v in raw]
            for v in values:
                self._check_bounds(v)
            return values
        value = self._scalar(raw, self.type)
        self._check_bounds(value)
        if self.free == "file" and not Path(value).is_absolute() and Path(value).is_file():
            # a file named from where the command runs (the notebook itself runs in its own folder)
            value = str(Path(value).resolve())
        return value


def split_list(text: str, name: str) -> list[str]:
    """The entries of a command-line comma list; an empty entry (``50,``, ``,50``, ``50,,60``) is an error."""
    parts = [part.strip() for part in text.replace(";", ",").split(",")]
    if len(parts) > 1 and not all(parts):
        raise ParameterError(f"parameter {name}: empty entry in the comma list {text!r}")
    return [p for p in parts if p]


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(x)


def _parse_bound(text: str) -> float | None:
    text = text.strip().lower()
    if text in ("inf", "+inf", "-inf"):
        return None
    return float(text)


def _parse_comment(name: str, comment: str) -> dict[str, Any]:
    body = comment.lstrip("#").strip()
    if ";" not in body:
        raise ParameterError(f"parameter {name}: comment must be '# meaning; range [a, b]' or '# meaning; choices a, b'")
    meaning, spec = body.rsplit(";", 1)
    out: dict[str, Any] = {}
    if spec.strip().startswith("test"):
        test = spec.strip()[len("test"):].strip()
        if not test or ";" not in meaning:
            raise ParameterError(f"parameter {name}: write the test value last, as '# meaning; range [a, b]; test VALUE'")
        out["test"] = test
        meaning, spec = meaning.rsplit(";", 1)
    spec = spec.strip()
    out["meaning"] = meaning.strip()
    if spec.startswith("range"):
        m = _RANGE_RE.match(spec[len("range"):])
        if not m:
            raise ParameterError(f"parameter {name}: cannot read range {spec!r}")
        out.update(
            low=_parse_bound(m.group(2)),
            high=_parse_bound(m.group(3)),
            low_open=m.group(1) == "(",
            high_open=m.group(4) == ")",
        )
    elif spec.startswith("choices"):
        out["choices"] = tuple(c.strip().strip("'\"") for c in spec[len("choices"):].split(",") if c.strip())
    elif spec in ("file", "names"):
        out["free"] = spec
    else:
        raise ParameterError(f"parameter {name}: comment must end with 'range ...' or 'choices ...', got {spec!r}")
    return out


def parse_parameters_source(source: str) -> dict[str, Parameter]:
    """Parse the source of a ``parameters`` cell into declared parameters (in order)."""
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
    params: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name) or node.value is None:
            raise ParameterError(f"parameters cell line {node.lineno}: expected 'name: type = value  # meaning; range ...'")
        name = node.target.id
        type_name = ast.unparse(node.annotation)
        if type_name not in SUPPORTED_TYPES:
            raise ParameterError(f"parameter {name}: type {type_name!r} is not one of {', '.join(SUPPORTED_TYPES)}")
        comment = comments.get(node.end_lineno or node.lineno) or comments.get(node.lineno)
        if comment is None:
            raise ParameterError(f"parameter {name}: missing '# meaning; range ...' comment")
        spec = _parse_comment(name, comment)
        default = ast.literal_eval(node.value)
        param = Parameter(name=name, type=type_name, default=default, **spec)
        param.convert(default)  # the default itself must satisfy the declaration
        if param.test is not None:
            try:
                param.convert(param.test)
            except ParameterError as err:
                raise ParameterError(f"parameter {name}: its test value does not satisfy the declaration: {err}") from None
        params[name] = param
    return params


def notebook_parameters(path: str | Path) -> dict[str, Parameter]:
    """Declared parameters of a notebook (empty if it has no ``parameters`` cell)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) > 1:
        raise ParameterError(f"{path}: more than one cell is tagged 'parameters'")
    if not cells:
        return {}
    source = cells[0]["source"]
    return parse_parameters_source("".join(source) if isinstance(source, list) else source)


RENAMED_PARAMETERS: dict[str, str] = {
    "eps_list": "eps_grid",  # 03a, 04a
    "eps_values": "eps_grid",  # 01d
    "eps_high": "eps_grid_high",  # 01b (01c's eps_high, a single eps, keeps its name)
    "eps_low": "eps_grid_low",  # 01b (likewise)
}
"""Old parameter names -> new ones (stop 20). One rule across the book: ``eps`` is one privacy level,
``eps_grid`` the list of privacy levels a notebook sweeps (``eps_grid_<role>`` when it has two), so that
``-p eps_grid ...`` on a chapter reaches every notebook that sweeps eps."""


def unknown_parameter(name: str, declared: Iterable[str], where: str = "") -> ParameterError:
    """The error for a ``-p`` name that ``where`` (a notebook or a chapter) does not declare: it lists
    the declared names and, for an old name (:data:`RENAMED_PARAMETERS`), says its new one."""
    declared = list(declared)
    new = RENAMED_PARAMETERS.get(name)
    hint = f"; {name} was renamed {new}" if new is not None and new in declared else ""
    return ParameterError(f"unknown parameter {name}{' for ' + where if where else ''} "
                          f"(declared: {', '.join(declared) or 'none'}{hint})")


def validate_overrides(declared: dict[str, Parameter], overrides: dict[str, Any], where: str = "") -> dict[str, Any]:
    """Convert and check user overrides against the declarations; unknown names are errors."""
    values: dict[str, Any] = {}
    for name, raw in overrides.items():
        if name not in declared:
            raise unknown_parameter(name, declared, where)
        values[name] = declared[name].convert(raw)
    return values
