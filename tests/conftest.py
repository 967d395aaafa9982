import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import pytest  # noqa: E402

from kdplug import testing  # noqa: E402

# Two logical CPU devices for MirroredStrategy parity tests; must happen before
# TensorFlow initialises its devices, so it runs at collection time.
CPU_DEVICES = testing.two_cpu_devices()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own kdplug cache folder and a fixed seed."""
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "kdplug-cache"))
    keras.utils.set_random_seed(0)


@pytest.fixture
def cpu_devices():
    return CPU_DEVICES
