"""The TensorBoard callback's `embeddings_freq` / `embeddings_metadata`: the Projector config and the
embedding checkpoint `train/keras_embedding.ckpt-<epoch>` (a TF tensor bundle), read back with
jitflow's checkpoint reader and, when TensorFlow is installed, with TensorBoard's projector plugin
and `tf.train.load_checkpoint`."""
from __future__ import annotations

import os

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.plugins.projector import projector_config_pb2

import jitflow as jf

k = jf.keras


def _fit(logdir, metadata, epochs=3, freq=1):
    rng = np.random.default_rng(0)
    tokens = k.Input((4,), dtype="int32", name="tokens")
    words = k.layers.Embedding(12, 3, name="words")(tokens)
    h = k.layers.Dense(2, name="hid")(k.layers.Flatten()(words))
    tag = k.Input((1,), dtype="int32", name="tag")
    tags = k.layers.Embedding(5, 2, name="tags")(tag)
    model = k.Model(inputs=[tokens, tag], outputs=[h, k.layers.Flatten()(tags)])
    model.compile("sgd", loss=["mse", "mse"])
    x = [rng.integers(0, 12, (8, 4)).astype(np.int32), rng.integers(0, 5, (8, 1)).astype(np.int32)]
    model.fit(x, [np.zeros((8, 2), np.float32), np.zeros((8, 2), np.float32)], epochs=epochs, verbose=0,
              callbacks=[k.callbacks.TensorBoard(str(logdir), embeddings_freq=freq, embeddings_metadata=metadata,
                                                 write_graph=False)])
    return model


def _config(path):
    config = projector_config_pb2.ProjectorConfig()
    with open(path) as f:
        text_format.Parse(f.read(), config)
    return config


def test_projector_config_and_embedding_checkpoints(tmp_path):
    (tmp_path / "words.tsv").write_text("\n".join(f"w{i}" for i in range(12)) + "\n")
    model = _fit(tmp_path, {"words": "words.tsv"}, epochs=3, freq=2)
    for where in (tmp_path, tmp_path / "train"):
        config = _config(where / "projector_config.pbtxt")
        assert [(e.tensor_name, e.metadata_path) for e in config.embeddings] == [
            ("layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE", "words.tsv"),
            ("layer_with_weights-1/embeddings/.ATTRIBUTES/VARIABLE_VALUE", "")]   # Keras's layer order
    assert (tmp_path / "train" / "words.tsv").read_text().startswith("w0\n")
    names = sorted(os.listdir(tmp_path / "train"))
    assert "keras_embedding.ckpt-0.index" in names and "keras_embedding.ckpt-2.index" in names
    assert "keras_embedding.ckpt-1.index" not in names    # every embeddings_freq epochs
    reader = jf.train.load_checkpoint(str(tmp_path / "train" / "keras_embedding.ckpt-2"))
    words, tags = model.get_layer("words"), model.get_layer("tags")
    np.testing.assert_array_equal(reader.get_tensor("layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE"),
                                  words.embeddings.numpy())
    np.testing.assert_array_equal(reader.get_tensor("layer_with_weights-1/embeddings/.ATTRIBUTES/VARIABLE_VALUE"),
                                  tags.embeddings.numpy())
    assert jf.train.latest_checkpoint(str(tmp_path / "train")).endswith("keras_embedding.ckpt-2")


def test_unknown_metadata_layer_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"unrecognized Embedding layer names \['nope'\]"):
        _fit(tmp_path, {"nope": "x.tsv"}, epochs=1)
    assert not (tmp_path / "projector_config.pbtxt").exists()
    with pytest.raises(ValueError, match="embeddings_freq: expected a non-negative int"):
        k.callbacks.TensorBoard(str(tmp_path), embeddings_freq=-1)


@pytest.mark.tf
def test_tensorboard_projector_plugin_reads_them(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.projector import projector_plugin

    (tmp_path / "words.tsv").write_text("\n".join(f"w{i}" for i in range(12)) + "\n")
    model = _fit(tmp_path, {"words": "words.tsv"}, epochs=2)
    ckpt = tf.train.load_checkpoint(str(tmp_path / "train" / "keras_embedding.ckpt-1"))
    np.testing.assert_array_equal(ckpt.get_tensor("layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE"),
                                  model.get_layer("words").embeddings.numpy())
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(tmp_path))
    plugin = projector_plugin.ProjectorPlugin(base_plugin.TBContext(logdir=str(tmp_path), data_provider=provider,
                                                                    multiplexer=multiplexer))
    plugin._update_configs()   # what the plugin's is_active thread and its routes run
    configs = plugin._configs
    assert set(configs) == {"train"}
    config = configs["train"]
    assert config.model_checkpoint_path.endswith("keras_embedding.ckpt-1")
    assert [e.tensor_name for e in config.embeddings][0] == "layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE"
    reader = plugin._get_reader_for_run("train")
    np.testing.assert_array_equal(reader.get_tensor(config.embeddings[0].tensor_name),
                                  model.get_layer("words").embeddings.numpy())
    assert plugin._get_metadata_file_for_tensor(config.embeddings[0].tensor_name, config) == "words.tsv"
    assert list(config.embeddings[0].tensor_shape) == [12, 3]   # the plugin read the checkpoint's shapes
    # and serves the matrix over its HTTP route, as the Projector front end fetches it
    from werkzeug.test import Client
    apps = plugin.get_plugin_apps()
    response = Client(apps["/tensor"]).get("/tensor", query_string={"run": "train",
                                                                    "name": config.embeddings[0].tensor_name})
    assert response.status_code == 200
    np.testing.assert_array_equal(np.frombuffer(response.data, np.float32).reshape(12, 3),
                                  model.get_layer("words").embeddings.numpy())
