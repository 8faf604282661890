"""The TensorBoard callback: `fit` writes what Keras writes, read back with TensorBoard's own loaders."""
from __future__ import annotations

import glob
import gzip
import json
import os

import numpy as np
import pytest

import jitflow as jf
from keras_data import mnist_like

ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
L = jf.keras.layers
from tensorboard.util import tensor_util  # noqa: E402

EXPECTED_TRAIN = {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "batch_loss", "batch_accuracy"}
EXPECTED_VALIDATION = {"epoch_loss", "epoch_accuracy", "evaluation_loss_vs_iterations",
                       "evaluation_accuracy_vs_iterations"}


def _accumulator(path):
    acc = ea.EventAccumulator(path, size_guidance={ea.TENSORS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0})
    acc.Reload()
    return acc


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    jf.keras.backend.clear_session()
    logdir = str(tmp_path_factory.mktemp("tb"))
    x, y = mnist_like(96)
    model = jf.keras.Sequential([L.Conv2D(4, 3, activation="relu", input_shape=(28, 28, 1)), L.MaxPool2D(),
                                 L.Flatten(), L.Dense(10)])
    model.compile(jf.keras.optimizers.Adam(1e-3), jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    tb = jf.keras.callbacks.TensorBoard(log_dir=logdir, histogram_freq=1, write_graph=True, write_images=True,
                                        update_freq=2, profile_batch=(3, 4))
    model.fit(x, y, batch_size=16, epochs=2, validation_split=1 / 3, callbacks=[tb], verbose=0)
    return logdir


def test_both_runs_and_every_scalar_tag(logdir):
    assert sorted(os.listdir(logdir)) == ["train", "validation"]
    train, val = _accumulator(os.path.join(logdir, "train")), _accumulator(os.path.join(logdir, "validation"))
    assert EXPECTED_TRAIN <= set(train.Tags()["tensors"])
    assert EXPECTED_VALIDATION <= set(val.Tags()["tensors"])
    assert [e.step for e in train.Tensors("epoch_loss")] == [0, 1]
    assert [e.step for e in val.Tensors("epoch_accuracy")] == [0, 1]
    # update_freq=2: a batch summary every second optimizer step (4 steps per epoch)
    assert [e.step for e in train.Tensors("batch_loss")] == [2, 4, 6, 8]
    assert [e.step for e in val.Tensors("evaluation_loss_vs_iterations")] == [4, 8]
    lr = [float(np.asarray(tensor_util.make_ndarray(e.tensor_proto))) for e in train.Tensors("epoch_learning_rate")]
    np.testing.assert_allclose(lr, [1e-3, 1e-3], rtol=1e-6)


def test_weight_histograms_and_images(logdir):
    train = _accumulator(os.path.join(logdir, "train"))
    tags = set(train.Tags()["tensors"])
    for weight in ("conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias"):
        assert f"sequential/{weight}/histogram" in tags
        events = train.Tensors(f"sequential/{weight}/histogram")
        assert [e.step for e in events] == [0, 1]
        assert tensor_util.make_ndarray(events[0].tensor_proto).shape[1] == 3   # (left, right, count) buckets
    assert "sequential/conv2d/kernel/image" in tags    # (3, 3, 1, 4) → 4 images of 3x3
    images = train.Tensors("sequential/conv2d/kernel/image")
    assert len(tensor_util.make_ndarray(images[0].tensor_proto)) == 2 + 3   # width, height, 3 PNGs (max_outputs)


def test_model_config_for_the_conceptual_graph(logdir):
    train = _accumulator(os.path.join(logdir, "train"))
    event, = train.Tensors("keras")
    config = json.loads(tensor_util.make_ndarray(event.tensor_proto).item())
    assert config["class_name"] == "Sequential"
    # Keras 3's Sequential config (as TF's callback writes it): the InputLayer, then the layers
    assert [l["class_name"] for l in config["config"]["layers"]] == ["InputLayer", "Conv2D", "MaxPooling2D", "Flatten",
                                                                    "Dense"]
    assert train.SummaryMetadata("keras").plugin_data.plugin_name == "graph_keras_model"


def test_graph_with_step_stats_and_profile_with_step_markers(logdir):
    train = _accumulator(os.path.join(logdir, "train"))
    graph = train.Graph()
    ops = {n.op for n in graph.node}
    assert {"Conv2D", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "BiasAdd", "BiasAddGrad"} <= ops
    assert any(n.name.startswith("sequential/conv2d/") for n in graph.node)
    tags = set(train.Tags()["tensors"])
    assert {"batch_1", "batch_4"} <= tags   # graph_run_metadata: the first batch, the profiled range
    profiles = glob.glob(os.path.join(logdir, "train", "plugins", "profile", "*", "*.xplane.pb"))
    assert len(profiles) == 1
    traces = glob.glob(os.path.join(logdir, "train", "plugins", "profile", "*", "*.trace.json.gz"))
    events = json.load(gzip.open(traces[0]))["traceEvents"]
    steps = sorted(e["args"]["step_num"] for e in events
                   if e.get("name") == "train" and "step_num" in e.get("args", {}))
    assert steps == [2, 3]   # profile_batch=(3, 4): the third and fourth steps (0-based step numbers 2 and 3)


def test_tensorboard_arguments_are_checked():
    with pytest.raises(ValueError, match=r"update_freq: expected 'epoch', 'batch' or a positive int"):
        jf.keras.callbacks.TensorBoard(update_freq="sometimes")
    with pytest.raises(ValueError, match=r"profile_batch: expected 0 \(off\) or 1 <= start <= stop"):
        jf.keras.callbacks.TensorBoard(profile_batch=(5, 2))
