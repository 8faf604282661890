"""Real servers for tests: free ports and a `tensorboard --logdir` subprocess on 127.0.0.1."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tensorboard_exe() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    if not os.path.exists(exe):
        pytest.skip("no tensorboard script next to the Python interpreter")
    return exe


def fetch(url: str, timeout: float = 10) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return body


def get(base: str, path: str, **params) -> bytes:
    """GET base+path, retrying for a while: TensorBoard's data server loads runs lazily."""
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else base + path
    deadline = time.time() + 20
    while True:
        try:
            return fetch(url)
        except urllib.error.HTTPError as e:
            if e.code != 404 or time.time() > deadline:
                raise
        except (urllib.error.URLError, ConnectionError):
            if time.time() > deadline:
                raise
        time.sleep(0.25)


@contextlib.contextmanager
def tensorboard(logdir: str, ready: Callable[[str], bool], timeout: float = 60) -> Iterator[str]:
    """Run `tensorboard --logdir` on 127.0.0.1 until `ready(base_url)`; always killed after."""
    port = free_port()
    proc = subprocess.Popen([tensorboard_exe(), "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1",
                             "--reload_interval", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"tensorboard exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if ready(base):
                    break
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
                pass
            if time.time() > deadline:
                pytest.fail(f"tensorboard at {base} was not ready within {timeout:.0f} s")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
