"""`jf.autograph.to_code` prints the converted source in TensorFlow's shape (issue #17).

TF's output for each function of `autograph/functions.py` is recorded in
`autograph/to_code_tf.json` (by `autograph/record_to_code.py`). The comparison normalises only
what TF itself leaves to chance: the order of state names (TF orders them by a set), and
TF's no-op `(break_,)` marker and the unused `nonlocal` in `extra_test`.
"""
import inspect
import json
import os
import re
import sys

import pytest

import jitflow as jf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograph")
sys.path.insert(0, HERE)

import functions  # noqa: E402

with open(os.path.join(HERE, "to_code_tf.json"), encoding="utf-8") as _f:
    RECORDED = json.load(_f)

_NAMES = re.compile(r"\((?:'[A-Za-z_0-9]+', )*'[A-Za-z_0-9]+',?\)")


def _sorted_list(text: str) -> str:
    return ", ".join(sorted(x.strip() for x in text.split(",") if x.strip()))


def normalise(code: str) -> str:
    lines = []
    in_extra = False
    undefined: list = []
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("def "):
            in_extra = stripped.startswith("def extra_test")
        if stripped == "(break_,)" or (in_extra and stripped.startswith("nonlocal ")):
            continue
        if re.fullmatch(r"\w+ = ag__\.Undefined\('\w+'\)", stripped):
            undefined.append(line)
            continue
        if undefined:  # a run of `x = ag__.Undefined('x')`: TF's order is a set's
            lines += sorted(undefined)
            undefined = []
        indent = line[:len(line) - len(line.lstrip())]
        m = re.fullmatch(r"nonlocal (.*)", stripped)
        if m:
            line = f"{indent}nonlocal {_sorted_list(m.group(1))}"
        m = re.fullmatch(r"return \((.*),?\)", stripped)
        if m and "ag__" not in stripped:
            line = f"{indent}return ({_sorted_list(m.group(1))})"
        m = re.fullmatch(r"(.*), = vars_|(.*) = vars_", stripped)
        if m:
            line = f"{indent}{_sorted_list(m.group(1) or m.group(2))} = vars_"
        line = _NAMES.sub(lambda t: "(" + _sorted_list(t.group(0)[1:-1]) + ")", line)
        lines.append(line)
    lines += sorted(undefined)
    return "\n".join(lines)


FUNCTIONS = dict(inspect.getmembers(functions, inspect.isfunction))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_to_code_has_tensorflows_shape(name):
    want = RECORDED["to_code"][name]
    got = jf.autograph.to_code(FUNCTIONS[name])
    assert normalise(got) == normalise(want), f"jitflow:\n{got}\nTensorFlow {RECORDED['tensorflow']}:\n{want}"


def test_most_conversions_are_exactly_tensorflows():
    same = [n for n in FUNCTIONS if jf.autograph.to_code(FUNCTIONS[n]) == RECORDED["to_code"][n]]
    assert len(same) >= 8, f"only {same} print exactly as TF's"


@pytest.mark.parametrize("name,args,expected", [
    ("plain", (1.0, 2.0), 6.0), ("if_else", (-3.0,), 3.0), ("if_no_else", (3.0,), 9.0),
    ("while_loop", (0.0,), 45.0), ("early_return", (-2.0,), 2.0), ("nested_if", (1.0, -2.0), 3.0),
    ("for_break", (10,), 15), ("calls", (-0.5,), 1.0), ("sum_even", ([1, 2, 3, 4],), 6),
])
def test_converted_functions_compute_what_python_does(name, args, expected):
    fn = FUNCTIONS[name]
    assert fn(*args) == expected
    tensors = [jf.constant(a) if not isinstance(a, list) else a for a in args]
    assert float(jf.function(fn)(*tensors)) == pytest.approx(float(expected))


def test_for_over_tensor_matches():
    assert float(jf.function(functions.for_sum)(jf.constant([1.0, 2.0, 3.5]))) == 6.5


@pytest.mark.tf
def test_recording_matches_live_tensorflow():
    tf = pytest.importorskip("tensorflow")
    # Normalised: TF orders some names by a set of strings, which differs between processes.
    live = {n: normalise(tf.autograph.to_code(f)) for n, f in FUNCTIONS.items()}
    recorded = {n: normalise(code) for n, code in RECORDED["to_code"].items()}
    assert live == recorded, "TF's to_code changed: re-run autograph/record_to_code.py"
