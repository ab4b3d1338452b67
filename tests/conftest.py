import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _cuda_device_present() -> bool:
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return False
        err, count = drv.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:
        return False


HAS_GPU = _cuda_device_present()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
