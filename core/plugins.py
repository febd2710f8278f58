"""Import-path hooks: a backend setting ``package.module:ClassName`` names the class to build.

The factories (:func:`core.llm.factory.make_llm`, :func:`core.embed.base.make_embedder`)
handle their built-in names first and end here, as txtai's factories do: any other
value of ``llm.backend`` or ``embed.backend`` is imported and constructed, and the
result must satisfy the role's protocol. A new backend is then one file (the class)
plus one settings group (its own fields), with no edit to a factory or a page
(docs/LLM_BACKENDS.md, "Adding a backend").
"""

from __future__ import annotations

import importlib
import re
from typing import Any, TypeVar

from core.config.common import IMPORT_PATH_PATTERN
from core.errors import ConfigError

__all__ = ["build_from_import_path", "import_class", "is_import_path"]

T = TypeVar("T")


def is_import_path(value: str) -> bool:
    """Whether ``value`` has the ``package.module:ClassName`` form."""
    return re.fullmatch(IMPORT_PATH_PATTERN, value) is not None


def import_class(path: str, setting: str) -> type:
    """The class named by ``path``; a :class:`ConfigError` naming ``setting`` when it cannot be had."""
    if not is_import_path(path):
        raise ConfigError(f"{setting}={path!r} is neither a built-in backend nor `package.module:ClassName`")
    module_name, _, class_name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{setting}={path!r}: cannot import {module_name}: {exc}",
            hint="Install the package that provides the backend, or fix the module path.",
        ) from exc
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise ConfigError(f"{setting}={path!r}: {module_name} has no class {class_name}")
    return cls


def build_from_import_path(path: str, setting: str, protocol: type[T], *args: Any, **kwargs: Any) -> T:
    """Import ``path``, construct it with ``args`` and ``kwargs`` and check it satisfies ``protocol``."""
    instance = import_class(path, setting)(*args, **kwargs)
    if not isinstance(instance, protocol):
        raise ConfigError(f"{setting}={path!r} built a {type(instance).__name__}, which is not a {protocol.__name__}")
    return instance
