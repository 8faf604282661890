"""The jitflow panel: a Flask app beside TensorBoard that explains every retrace and shows
where time went, read from the same logdir with TensorBoard's own event loaders.

From the command line (starts TensorBoard next to it unless `--no-tensorboard`):

    jitflow panel --logdir runs

Inside a training process, or for embedding and tests:

    import jitflow as jf
    from jitflow import webui

    panel = webui.serve_in_background("runs")      # a free port on 127.0.0.1
    print(panel.url)
    writer = jf.summary.create_file_writer("runs/train")
    ...                                            # reload the page: new traces appear
    panel.stop()

    app = webui.create_app("runs")                 # a plain Flask app (WSGI)

Pages and their JSON twins are listed in `webui/API.md`.
"""
from .app import create_app
from .logdir import Logdir
from .server import PanelServer, serve_in_background

__all__ = ["create_app", "serve_in_background", "PanelServer", "Logdir"]
