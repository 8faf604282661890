"""TFRecord writing/reading, corruption handling, Example parsing, file ops."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.io import records
from jitflow.summary import record_writer


def _write(path, payloads, compression=None):
    with jf.io.TFRecordWriter(str(path), compression) as w:
        for p in payloads:
            w.write(p)


def test_summary_writer_uses_the_shared_framing():
    assert record_writer.frame is records.frame and record_writer.masked_crc32c is records.masked_crc32c


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_round_trip_many_files_and_parallel_reads(tmp_path, compression):
    files = []
    for k in range(3):
        path = tmp_path / f"part{k}.tfrecord"
        _write(path, [f"{k}:{i}".encode() * (1 + i % 50) for i in range(200)], compression)
        files.append(str(path))
    seq = [r for r in jf.data.TFRecordDataset(files, compression_type=compression).as_numpy_iterator()]
    assert len(seq) == 600 and seq[0] == b"0:0" and seq[200] == b"1:0"
    par = list(jf.data.TFRecordDataset(files, compression_type=compression, num_parallel_reads=3)
               .as_numpy_iterator())
    assert par[:3] == [b"0:0", b"1:0", b"2:0"]  # TF's order: one record from each file in turn
    assert sorted(par) == sorted(seq)
    assert list(jf.io.tf_record_iterator(files[1], compression)) == seq[200:400]


def test_gzip_file_is_a_real_gzip_stream(tmp_path):
    path = tmp_path / "x.tfrecord.gz"
    _write(path, [b"hello"], "GZIP")
    assert gzip.decompress(path.read_bytes()) == records.frame(b"hello")


def test_large_records_cross_block_boundaries(tmp_path):
    big = [os.urandom(3 << 20), b"", os.urandom(17)]
    path = tmp_path / "big.tfrecord"
    _write(path, big)
    assert list(jf.io.tf_record_iterator(str(path))) == big


@pytest.mark.parametrize("damage,what", [
    (lambda b: b[:-3], "truncated record"),
    (lambda b: b[:len(b) - 30] + bytes([b[len(b) - 30] ^ 1]) + b[len(b) - 29:], "data CRC"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 0xFF]), "data CRC"),
    (lambda b: b + b"\x01\x02\x03", "truncated record header"),
])
def test_corrupt_records_raise_data_loss_naming_file_and_offset(tmp_path, damage, what):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"a" * 40, b"b" * 40])
    path.write_bytes(damage(path.read_bytes()))
    ds = jf.data.TFRecordDataset(str(path))
    with pytest.raises(jf.errors.DataLossError) as info:
        list(ds)
    msg = str(info.value)
    assert str(path) in msg and what in msg and "offset" in msg
    offset = int(msg.split("offset ")[1].split(";")[0].split()[0])
    assert offset in (0, 56, 112)  # a record boundary: 40 bytes + 16 of framing each


def test_corrupt_length_crc_detected(tmp_path):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"xyz"])
    data = bytearray(path.read_bytes())
    data[9] ^= 0x10  # inside the length CRC
    path.write_bytes(bytes(data))
    with pytest.raises(jf.errors.DataLossError, match="length CRC.*offset 0"):
        list(jf.io.tf_record_iterator(str(path)))


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(jf.errors.NotFoundError, match="nope.tfrecord"):
        list(jf.data.TFRecordDataset(str(tmp_path / "nope.tfrecord")))


def test_writer_rejects_non_bytes_and_closed_use(tmp_path):
    w = jf.io.TFRecordWriter(str(tmp_path / "w.tfrecord"))
    with pytest.raises(TypeError, match="record: expected bytes"):
        w.write(123)
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write(b"x")
    with pytest.raises(ValueError, match="compression_type"):
        jf.io.TFRecordOptions("LZ4")


def _example(**features):
    f = {}
    for k, v in features.items():
        if isinstance(v[0], bytes):
            f[k] = jf.train.Feature(bytes_list=jf.train.BytesList(value=v))
        elif isinstance(v[0], float):
            f[k] = jf.train.Feature(float_list=jf.train.FloatList(value=v))
        else:
            f[k] = jf.train.Feature(int64_list=jf.train.Int64List(value=v))
    return jf.train.Example(features=jf.train.Features(feature=f)).SerializeToString()


def test_parse_single_example_specs_and_errors():
    rec = _example(a=[1, 2, 3, 4], s=[b"x"], f=[0.5])
    out = jf.io.parse_single_example(rec, {
        "a": jf.io.FixedLenFeature([2, 2], jf.int64),
        "s": jf.io.FixedLenFeature([], jf.string),
        "f": jf.io.FixedLenFeature([1], jf.float32),
        "d": jf.io.FixedLenFeature([3], jf.float32, default_value=7.0),
        "seq": jf.io.FixedLenSequenceFeature([2], jf.int64, allow_missing=True),
    })
    a_seq = jf.io.parse_single_example(rec, {"a": jf.io.FixedLenSequenceFeature([2], jf.int64)})["a"]
    assert out["a"].numpy().tolist() == [[1, 2], [3, 4]] and out["s"].numpy() == b"x"
    assert out["d"].numpy().tolist() == [7.0, 7.0, 7.0] and out["seq"].shape == (0, 2)
    assert a_seq.numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(jf.errors.InvalidArgumentError, match="Feature: missing .* is required"):
        jf.io.parse_single_example(rec, {"missing": jf.io.FixedLenFeature([], jf.int64)})
    with pytest.raises(jf.errors.InvalidArgumentError, match="Key: a.*needs 3 values; got 4"):
        jf.io.parse_single_example(rec, {"a": jf.io.FixedLenFeature([3], jf.int64)})
    with pytest.raises(jf.errors.InvalidArgumentError, match="Key: s.  Data types don't match"):
        jf.io.parse_single_example(rec, {"s": jf.io.FixedLenFeature([], jf.int64)})
    with pytest.raises(ValueError, match="dtype must be jf.int64, jf.float32 or jf.string"):
        jf.io.parse_single_example(rec, {"a": jf.io.FixedLenFeature([], jf.int32)})
    with pytest.raises(jf.errors.InvalidArgumentError, match="Could not parse example"):
        jf.io.parse_single_example(b"\xff\xff garbage", {"a": jf.io.FixedLenFeature([], jf.int64)})


def test_parse_inside_jf_function_and_dataset():
    recs = [_example(label=[i], img=[bytes([i]) * 3]) for i in range(6)]
    desc = {"label": jf.io.FixedLenFeature([], jf.int64), "img": jf.io.FixedLenFeature([], jf.string)}

    @jf.function
    def parse(r):
        d = jf.io.parse_single_example(r, desc)
        return d["label"] * 2, jf.strings.length(d["img"])
    label, n = parse(jf.constant(recs[3]))
    assert int(label) == 6 and int(n) == 3
    ds = jf.data.Dataset.from_tensor_slices(recs).map(lambda r: jf.io.parse_single_example(r, desc)["label"])
    assert [int(x) for x in ds] == list(range(6))


def test_read_write_file_and_serialize_tensor(tmp_path):
    path = str(tmp_path / "sub" / "f.bin")
    jf.io.write_file(path, b"\x00payload")
    assert jf.io.read_file(path).numpy() == b"\x00payload"
    with pytest.raises(jf.errors.NotFoundError, match="nothere"):
        jf.io.read_file(str(tmp_path / "nothere"))
    for value in (np.arange(6, dtype=np.int32).reshape(2, 3), np.array([b"a", b"bc"], dtype=object),
                  np.float64(2.5)):
        t = jf.constant(value)
        back = jf.io.parse_tensor(jf.io.serialize_tensor(t), t.dtype)
        np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_parse_single_sequence_example():
    seq = jf.train.SequenceExample(context=jf.train.Features(feature={
        "length": jf.train.Feature(int64_list=jf.train.Int64List(value=[3]))}))
    frames = seq.feature_lists.feature_list["frames"].feature
    for t in range(3):
        frames.add().float_list.value.extend([t, t + 0.5])
    tokens = seq.feature_lists.feature_list["tokens"].feature
    for t in range(3):
        tokens.add().bytes_list.value.extend([b"w"] * (t + 1))
    context, seqs = jf.io.parse_single_sequence_example(
        seq.SerializeToString(), {"length": jf.io.FixedLenFeature([], jf.int64)},
        {"frames": jf.io.FixedLenSequenceFeature([2], jf.float32), "tokens": jf.io.VarLenFeature(jf.string),
         "absent": jf.io.FixedLenSequenceFeature([], jf.int64, allow_missing=True)})
    assert int(context["length"]) == 3
    assert seqs["frames"].numpy().tolist() == [[0, 0.5], [1, 1.5], [2, 2.5]]
    tokens = seqs["tokens"]  # a SparseTensor [steps, longest], as TF's
    assert tokens.indices.numpy().tolist() == [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]]
    assert tokens.dense_shape.numpy().tolist() == [3, 3]
    assert jf.sparse.to_dense(tokens).numpy().tolist() == [[b"w", b"", b""], [b"w", b"w", b""], [b"w", b"w", b"w"]]
    assert seqs["absent"].shape == (0,)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Feature list: gone .* is required"):
        jf.io.parse_single_sequence_example(seq.SerializeToString(),
                                            sequence_features={"gone": jf.io.FixedLenSequenceFeature([], jf.int64)})


def test_decode_raw_and_csv():
    raw = np.arange(6, dtype=np.float32).tobytes()
    np.testing.assert_array_equal(jf.io.decode_raw(raw, jf.float32).numpy(), np.arange(6, dtype=np.float32))
    pair = jf.io.decode_raw([b"\x01\x00\x02\x00", b"\x03\x00\x04\x00"], jf.int16)
    assert pair.numpy().tolist() == [[1, 2], [3, 4]]  # trailing NUL bytes survive conversion
    assert jf.io.decode_raw(b"\x00\x01", jf.int16, little_endian=False).numpy().tolist() == [1]
    with pytest.raises(jf.errors.InvalidArgumentError, match="not a multiple of 4"):
        jf.io.decode_raw(b"abc", jf.int32)
    x, n, s = jf.io.decode_csv(["1.5,2,a", ',3,"b,c"'], [[0.0], [0], [""]])
    assert (x.dtype, n.dtype, s.dtype) == (jf.float32, jf.int32, jf.string)
    assert x.numpy().tolist() == [1.5, 0.0] and n.numpy().tolist() == [2, 3] and s.numpy().tolist() == [b"a", b"b,c"]
    with pytest.raises(jf.errors.InvalidArgumentError, match="field 0 is required"):
        jf.io.decode_csv(",1", [jf.float32, [0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match="expect 2 fields but have 3"):
        jf.io.decode_csv("1,2,3", [[0], [0]])
    ds = jf.data.Dataset.from_tensor_slices(["1,2", "3,4"]).map(lambda line: jf.io.decode_csv(line, [[0], [0]]))
    assert [tuple(int(v) for v in row) for row in ds] == [(1, 2), (3, 4)]


def test_gfile(tmp_path):
    g = jf.io.gfile
    d = str(tmp_path / "a" / "b")
    g.makedirs(d)
    with g.GFile(os.path.join(d, "x.txt"), "w") as f:
        f.write("cat\ndog\n")
    with g.GFile(os.path.join(d, "x.txt")) as f:
        assert [line.strip() for line in f] == ["cat", "dog"]
    assert g.exists(d) and g.isdir(d) and g.listdir(d) == ["x.txt"]
    assert g.glob(str(tmp_path / "a" / "*" / "*.txt")) == [os.path.join(d, "x.txt")]
    with pytest.raises(jf.errors.FailedPreconditionError, match="exists"):
        g.copy(os.path.join(d, "x.txt"), os.path.join(d, "x.txt"))
    g.rename(os.path.join(d, "x.txt"), os.path.join(d, "y.txt"))
    assert g.stat(os.path.join(d, "y.txt")).st_size == 8
    with pytest.raises(jf.errors.NotFoundError):
        g.GFile(os.path.join(d, "x.txt"))
    g.rmtree(str(tmp_path / "a"))
    assert not g.exists(d)
