"""Fixtures for the panel tests (flaskr's shape): a logdir written by really running
jf.functions under a summary writer (webui_testutil.py), then `app` and `client` for it.

Runs in the session logdir:
  train      retraces of every kind of change, a function traced ≥5 times, scalars and
             two exported traces (op profiles) plus one graph-only export
  eval/xss   a function whose name, and an argument whose value, hold `<script>`
  .          the logdir itself: one scalar
  broken     a truncated copy of train's event file (partly readable)
  garbage    an event file of random bytes
  escape     a symlink to a directory outside the logdir, holding a valid event file
"""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest

from jitflow.summary import context as summary_context
from jitflow.webui import create_app
from webui_testutil import event_file, write_logdir


@pytest.fixture(scope="session")
def outside_dir(tmp_path_factory) -> Path:
    """A directory beside (not inside) the logdir, holding a valid event file."""
    return tmp_path_factory.mktemp("outside")


@pytest.fixture(scope="session")
def logdir(tmp_path_factory, outside_dir) -> Path:
    root = tmp_path_factory.mktemp("webui_logdir")
    saved = (summary_context.tls.writer, summary_context.tls.step)
    try:
        with warnings.catch_warnings():   # RetraceWarning and illegal-tag warnings are expected here
            warnings.simplefilter("ignore")
            write_logdir(root)
    finally:
        summary_context.tls.writer, summary_context.tls.step = saved
    secret = outside_dir / "secret_run"
    secret.mkdir()
    shutil.copy(event_file(root / "train"), secret / "events.out.tfevents.1.secret")
    os.symlink(secret, root / "escape", target_is_directory=True)
    (root / "linked").mkdir()
    os.symlink(secret / "events.out.tfevents.1.secret", root / "linked" / "events.out.tfevents.2.link")
    return root


@pytest.fixture
def app(logdir):
    return create_app(logdir, {"TESTING": True, "TENSORBOARD_PORT": 6006})


@pytest.fixture
def client(app):
    return app.test_client()
