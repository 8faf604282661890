"""Seed 004's tf.data / TFRecord code, ported with `tf.` -> `jf.` and run as written.

The seed trains with `model.fit(train_dataset, ...)`; here the same dataset feeds a
`jf.function` training step instead (Keras is another part of jitflow).
"""
from __future__ import annotations

import os

import numpy as np

import jitflow as jf

tf = jf  # the seed's code below, unchanged except for this alias


def test_seed004_cats_vs_dogs_pipeline(cats_vs_dogs):
    num_epochs = 2
    batch_size = 4
    data_dir = cats_vs_dogs
    train_cats_dir = data_dir + '/train/cats/'
    train_dogs_dir = data_dir + '/train/dogs/'

    def _decode_and_resize(filename, label):
        image_string = tf.io.read_file(filename)
        image_decoded = tf.image.decode_jpeg(image_string)
        image_resized = tf.image.resize(image_decoded, [256, 256]) / 255.0
        return image_resized, label

    train_cat_filenames = tf.constant([train_cats_dir + name for name in os.listdir(train_cats_dir)])
    train_dog_filenames = tf.constant([train_dogs_dir + name for name in os.listdir(train_dogs_dir)])
    train_filenames = tf.concat([train_cat_filenames, train_dog_filenames], axis=-1)
    train_labels = tf.concat([tf.zeros(train_cat_filenames.shape, dtype=tf.int32),
                              tf.ones(train_dog_filenames.shape, dtype=tf.int32)], axis=-1)
    train_dataset = tf.data.Dataset.from_tensor_slices((train_filenames, train_labels))
    train_dataset = train_dataset.map(map_func=_decode_and_resize,
                                      num_parallel_calls=tf.data.experimental.AUTOTUNE)
    train_dataset = train_dataset.shuffle(20000).batch(batch_size)
    train_dataset = train_dataset.prefetch(tf.data.experimental.AUTOTUNE)

    seen_labels = []
    for _ in range(num_epochs):
        for images, labels in train_dataset:
            assert images.dtype == jf.float32 and images.shape[1:] == (256, 256, 3)
            assert 0.0 <= float(jf.reduce_min(images)) and float(jf.reduce_max(images)) <= 1.0
            seen_labels.append(labels.numpy())
    labels = np.concatenate(seen_labels)
    assert len(labels) == 2 * 12 and sorted(labels.tolist()) == [0] * 12 + [1] * 12
    # As in TF: decode_jpeg without `channels` leaves the channel count unknown when traced.
    assert train_dataset.element_spec[0].shape.as_list() == [None, 256, 256, None]


def test_seed004_tfrecord_round_trip(cats_vs_dogs, tmp_path):
    data_dir = cats_vs_dogs
    train_cats_dir = data_dir + '/train/cats/'
    train_dogs_dir = data_dir + '/train/dogs/'
    tfrecord_name = str(tmp_path / 'train.tfrecords')

    train_cat_filenames = [train_cats_dir + filename for filename in os.listdir(train_cats_dir)]
    train_dog_filenames = [train_dogs_dir + filename for filename in os.listdir(train_dogs_dir)]
    train_filenames = train_cat_filenames + train_dog_filenames
    train_labels = [0] * len(train_cat_filenames) + [1] * len(train_dog_filenames)

    with tf.io.TFRecordWriter(tfrecord_name) as writer:
        for filename, label in zip(train_filenames, train_labels):
            image = open(filename, 'rb').read()
            feature = {
                'image': tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())

    raw_dataset = tf.data.TFRecordDataset(tfrecord_name)
    feature_description = {
        'image': tf.io.FixedLenFeature([], tf.string),
        'label': tf.io.FixedLenFeature([], tf.int64)
    }

    def _parse_example(example_string):
        feature_dict = tf.io.parse_single_example(example_string, feature_description)
        feature_dict['image'] = tf.io.decode_jpeg(feature_dict['image'])
        return feature_dict['image'], feature_dict['label']

    dataset = raw_dataset.map(_parse_example)

    from PIL import Image
    got = list(dataset)
    assert len(got) == len(train_filenames)
    for (image, label), filename, want_label in zip(got, train_filenames, train_labels):
        assert int(label) == want_label and image.dtype == jf.uint8
        expected = np.asarray(Image.open(filename).convert("RGB"))
        np.testing.assert_array_equal(image.numpy(), expected)


def test_seed004_rot90_batch_and_iter():
    train_data = np.random.default_rng(0).random((10, 28, 28, 1)).astype(np.float32)
    train_label = np.arange(10, dtype=np.int64)
    mnist_dataset = tf.data.Dataset.from_tensor_slices((train_data, train_label))

    def rot90(image, label):
        image = tf.image.rot90(image)
        return image, label

    mnist_dataset = mnist_dataset.map(rot90)
    mnist_dataset = mnist_dataset.batch(4)
    batches = [(images.numpy(), labels.numpy()) for images, labels in mnist_dataset]
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(batches[0][0][1], np.rot90(train_data[1], 1, (0, 1)))
    mnist_dataset = mnist_dataset.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)
    assert sum(int(labels.shape[0]) for _, labels in mnist_dataset) == 10

    A, B, C = np.arange(3), np.arange(3) * 10, np.array([b"x", b"y", b"z"])
    dataset = tf.data.Dataset.from_tensor_slices((A, B, C))
    it = iter(dataset)
    a0, b0, c0 = next(it)
    a1, b1, c1 = next(it)
    assert (int(a0), int(b1), c1.numpy()) == (0, 10, b"y")
