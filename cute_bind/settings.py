"""Every environment variable cute_bind reads, in one registry.

Each variable is one :class:`Setting`: its name, how its text is read, its
default, when it is read and what it does. Every read in the package goes
through a setting (:meth:`Setting.text` for the raw text, :meth:`Setting.flag`
for a flag); nothing else calls ``os.environ`` for these names.
``docs/concepts/settings.md`` shows :data:`SETTINGS` as a table, and
``tests/test_settings.py`` keeps the two in step.

When a variable is read is part of its setting (``read``): a value read at
import (``CUTE_BIND_PURE_PYTHON`` for the ``kernel(...)`` call path) stays the
one read then, so the hot paths never consult the environment; the others are
read when what they govern happens (a handle is made, a compile looks up the
cache), so a test or a long-running process may change them in between.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

__all__ = [
    "Setting",
    "SETTINGS",
    "PURE_PYTHON",
    "CHECKED",
    "SKIP_DSL_CHECK",
    "CACHE",
    "CACHE_DIR",
    "CACHE_SIZE",
    "CACHE_SHARED",
    "COMPILE_HOOK",
    "DSL_ARCH",
    "DOCS_URL",
]


@dataclass(frozen=True)
class Setting:
    """One environment variable the package reads."""

    #: the variable's name
    name: str
    #: how its text is read: ``flag`` (anything but empty or ``0`` is on), ``switch`` (``1``/``0``,
    #: also ``true``/``false``, ``yes``/``no``, ``on``/``off``; anything else is CB609), ``path``,
    #: ``size`` (bytes, or with a ``K``/``M``/``G`` suffix), ``text``
    type: str
    #: the value when unset, as a reader of the docs would write it
    default: str
    #: when the package reads it
    read: str
    #: what it does (one sentence or two)
    doc: str

    def text(self) -> str:
        """The variable's text now (``""`` when unset)."""
        return os.environ.get(self.name, "")

    def flag(self) -> bool:
        """Whether the variable is set to a true value (anything but empty or ``0``)."""
        return os.environ.get(self.name, "") not in ("", "0")

    def set(self, text: str) -> None:
        """Set the variable for this process and the processes it starts (``cute-bind cache warm --dir``'s workers)."""
        os.environ[self.name] = text


#: Every setting, by variable name, in the order registered (the order documented).
SETTINGS: Final[dict[str, Setting]] = {}


def _register(setting: Setting) -> Setting:
    if setting.name in SETTINGS:
        raise ValueError(f"{setting.name} is registered twice")
    SETTINGS[setting.name] = setting
    return setting


PURE_PYTHON: Final = _register(
    Setting(
        "CUTE_BIND_PURE_PYTHON",
        "flag",
        "0",
        "at import (the `kernel(...)` call path); when a handle or graph is made (the launch and replay loops); when a torch op is made (its eager call)",
        "Use the generated pure-Python fast paths instead of the C extension (as when it was not built).",
    )
)
CHECKED: Final = _register(
    Setting(
        "CUTE_BIND_CHECKED",
        "flag",
        "0",
        "when a handle is made",
        "Checked mode for every handle (as `handle.with_checks()`): the launching thread is named in CB403 and raw addresses are checked for alignment."
        " Each launch then runs in Python: about 15-30 us of host time per launch, 100-140x a plain launch on the 2-core CPU machine"
        " ([what it costs](threading.md#checked-mode)).",
    )
)
SKIP_DSL_CHECK: Final = _register(
    Setting(
        "CUTE_BIND_SKIP_DSL_CHECK",
        "flag",
        "0",
        "at the first `bind()` or `prepare()` of the process",
        "Skip the check of the installed nvidia-cutlass-dsl's internals (CB501) and the untested-version warning (CB503).",
    )
)
CACHE: Final = _register(
    Setting(
        "CUTE_BIND_CACHE",
        "switch",
        "1",
        "at each compile (a cache lookup)",
        "`0` turns the disk compile cache off (`@cute_bind.kernel(cache=False)` does it for one kernel).",
    )
)
CACHE_DIR: Final = _register(
    Setting(
        "CUTE_BIND_CACHE_DIR",
        "path",
        "`cute_bind` under the user's cache folder (`~/.cache/cute_bind` on Linux)",
        "at each compile (a cache lookup)",
        "The disk cache's folder.",
    )
)
CACHE_SIZE: Final = _register(
    Setting(
        "CUTE_BIND_CACHE_SIZE",
        "size",
        "1G",
        "at each compile (a cache lookup)",
        "The disk cache's size limit; least recently used entries are evicted beyond it.",
    )
)
CACHE_SHARED: Final = _register(
    Setting(
        "CUTE_BIND_CACHE_SHARED",
        "path",
        "unset (a private cache)",
        "at each compile (a cache lookup)",
        "The absolute path of a key file outside the cache folder: the folder is a shared team cache whose entries are signed with that key.",
    )
)
COMPILE_HOOK: Final = _register(
    Setting(
        "CUTE_BIND_COMPILE_HOOK",
        "switch",
        "0",
        "at `import cute_bind`",
        "`1` routes every `cute.compile` of the process through the disk cache (as `cute_bind.cache.install()`), so packages that call it themselves load their kernels from the cache.",
    )
)
DSL_ARCH: Final = _register(
    Setting(
        "CUTE_DSL_ARCH",
        "text",
        "unset (the current device's architecture)",
        "whenever a compile's target architecture is asked for",
        "nvidia-cutlass-dsl's own variable: the architecture it compiles for (`sm_90a`...); cute_bind reads it to key compiles and probes.",
    )
)
DOCS_URL: Final = _register(
    Setting(
        "CUTE_BIND_DOCS_URL",
        "text",
        "unset (a local page rendered from the catalog)",
        "when the language server starts (`cute-bind lsp`)",
        "The documentation site's base URL: the language server links a diagnostic to URL/diagnostics/CODE/ (`--docs-url` overrides it).",
    )
)
