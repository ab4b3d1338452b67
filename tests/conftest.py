import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


from cute_bind.dsl import cuda_device_count  # noqa: E402

HAS_GPU = cuda_device_count() > 0


#: The quick subset (`python -m pytest -m quick`, README "First commands"): the core tests of every room,
#: about a minute and a half on 2 cores where the whole suite takes 12-24 minutes.
QUICK = (
    "tests/launch/test_prepared.py",
    "tests/slots/test_slots.py",
    "tests/jit/test_dispatch.py",
    "tests/diagnostics/test_catalog.py",
    "tests/cache/test_store.py",
    "tests/graph/test_graph.py",
    "tests/static/test_checker.py",
    "tests/test_main.py",
)


def pytest_collection_modifyitems(config, items):
    quick = pytest.mark.quick
    for item in items:
        if os.path.relpath(str(item.path), ROOT).replace(os.sep, "/") in QUICK:
            item.add_marker(quick)
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=["c", "python"])
def path(request, monkeypatch):
    """Run a test on the C launch fast path and on the pure-Python one (handles made inside the test)."""
    if request.param == "python":
        monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    else:
        from cute_bind.launch import fast_path

        if fast_path() != "c":
            pytest.skip("the C fast path is not built")
    return request.param


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory):
    """The whole suite (and the processes it starts) uses a temporary disk compile cache, never the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUTE_BIND_CACHE_DIR", str(tmp_path_factory.mktemp("cute_bind_cache")))
        yield


def _forget_cache_history():
    # each module and each test starts from an empty history: its history() holds its own events
    # (tests count events with cache.mark() / history(since=...), which a full history does not stop)
    from cute_bind.cache import lookup

    lookup._HISTORY.clear()


@pytest.fixture(scope="module", autouse=True)
def _cache_history_per_module():
    _forget_cache_history()


@pytest.fixture(autouse=True)
def _cache_history_per_test():
    _forget_cache_history()
