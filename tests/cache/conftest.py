import importlib
import linecache
import sys
import textwrap

import pytest

import cute_bind


def _no_disk_cache() -> bool:
    from cute_bind import _dsl

    return not _dsl.features().disk_cache


#: for tests that set the cache folder themselves instead of taking ``cache_dir``
needs_disk_cache = pytest.mark.skipif(_no_disk_cache(), reason="the installed DSL has no export/reload of compiled functions: the disk cache is off")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private, empty cache folder for one test (and the cache on).

    Skips where the installed DSL cannot export and reload a compiled
    function (nvidia-cutlass-dsl 4.5): there the disk cache is off.
    """
    if _no_disk_cache():
        pytest.skip("the installed DSL has no export/reload of compiled functions: the disk cache is off")
    d = tmp_path / "cache"
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(d))
    monkeypatch.delenv("CUTE_BIND_CACHE", raising=False)
    monkeypatch.delenv("CUTE_BIND_CACHE_SIZE", raising=False)
    return d


class Modules:
    """Write kernel modules as source files and import them afresh (the DSL compiles from source files)."""

    def __init__(self, root, monkeypatch):
        self.root = root
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.setattr(sys, "dont_write_bytecode", True)  # every import reads the source just written
        self.names = set()

    def load(self, name, source, **more):
        for n in list(self.names):
            sys.modules.pop(n, None)
        for mod_name, text in {name: source, **more}.items():
            (self.root / f"{mod_name}.py").write_text(textwrap.dedent(text))
            self.names.add(mod_name)
        linecache.clearcache()
        importlib.invalidate_caches()
        return importlib.import_module(name)

    def cleanup(self):
        for n in self.names:
            sys.modules.pop(n, None)


@pytest.fixture
def modules(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    m = Modules(src, monkeypatch)
    yield m
    m.cleanup()


def outcomes_since(before):
    return [e.outcome for e in cute_bind.cache.history()[before:]]
