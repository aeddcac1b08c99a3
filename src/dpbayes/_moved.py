"""Names that moved to another module when a module was split: still importable from the old one, with a warning."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names"]


def moved_names(module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module``: each name of ``moved`` (name -> new module) is looked up
    in its new module with a DeprecationWarning naming it; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        if name in moved:
            warnings.warn(f"{module}.{name} moved to {moved[name]}.{name}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
