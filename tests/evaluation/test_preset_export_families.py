"""Students of every keras-hub family with a text classifier, exported as
keras-hub presets, load and predict from raw strings in a process that
imports keras-hub alone (issue #16; BERT: test_preset_export.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kdplug.data import TextEncoder
from kdplug.evaluation.preset_export import save_preset
from kdplug.models import HubTextClassifier
from kdplug.testing import families

TEXTS = ["good fine movie", "the plot was dull and boring", "superb acting"]
SEQ = 16

# One fresh interpreter for every folder: keras-hub and keras only.
LOAD_WITH_KERAS_HUB_ALONE = """
import json, sys
import keras_hub
texts = json.loads(sys.argv[1])
out = {}
for folder in sys.argv[2:]:
    model = keras_hub.models.TextClassifier.from_preset(folder)
    out[folder] = {"class": type(model).__name__,
                   "logits": model(model.preprocessor(texts)).numpy().tolist()}
out["kdplug_imported"] = any(m.split(".")[0] == "kdplug" for m in sys.modules)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_every_familys_preset_loads_with_keras_hub_alone(tmp_path):
    expected, folders = {}, []
    rng = np.random.default_rng(0)
    for family in families.CLASSIFIER_FAMILIES:
        if family == "bert":
            continue
        tokenizer = families.tiny_tokenizer(family, tmp_path / f"{family}-tokenizer")
        student = HubTextClassifier(
            families.tiny_backbone(family, tokenizer.vocabulary_size()), num_classes=3,
            dropout=0.0)
        # spread logits: at the initialisers' scale they barely differ by text
        student.set_weights([w + rng.normal(0, 0.3, w.shape).astype(w.dtype)
                             for w in student.get_weights()])
        folder = save_preset(student, str(tmp_path / family), tokenizer, SEQ,
                             label_names=["neg", "neutral", "pos"])
        folders.append(folder)
        expected[folder] = (family, np.asarray(student(TextEncoder(tokenizer, SEQ)(TEXTS))))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_KERAS_HUB_ALONE, json.dumps(TEXTS), *folders],
        capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded.pop("kdplug_imported") is False
    for folder, (family, logits) in expected.items():
        assert loaded[folder]["class"] == families.CLASS_PREFIXES[family] + "TextClassifier"
        np.testing.assert_allclose(loaded[folder]["logits"], logits, atol=1e-5)
        with open(os.path.join(folder, "labels.json")) as f:
            assert json.load(f)["names"] == ["neg", "neutral", "pos"]
