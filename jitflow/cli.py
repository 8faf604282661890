"""The `jitflow` command line.

    jitflow --version
    jitflow demo [--logdir runs/demo] [--steps 200] [--no-serve] [panel options]
    jitflow panel --logdir runs [--host 127.0.0.1] [--port 6007] [--allow-host NAME]
                  [--tensorboard/--no-tensorboard] [--tensorboard-port 6006]

Also `python -m jitflow ...`.
    jitflow inspect LOGDIR
    jitflow saved-model show --dir DIR [--all | --tag_set serve [--signature_def NAME]]
    jitflow saved-model to-logdir --dir DIR --logdir LOGDIR
    jitflow capture grpc://localhost:6009 --logdir runs [--duration-ms 2000]

Each subcommand is a pair of functions: `add_<name>_parser(subparsers)` declares its
arguments and `run_<name>(args) -> int` does the work; `build_parser` lists the pairs.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import List, Optional

from jitflow import __version__


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {port}")
    return port


# -- jitflow panel --------------------------------------------------------------------------
def add_serving_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by `panel` and `demo`: where the panel and TensorBoard listen."""
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to bind, for the panel and TensorBoard (default: 127.0.0.1, this machine "
                        "only; 0.0.0.0 exposes the logdir to the network, without authentication)")
    p.add_argument("--port", type=_port, default=6007,
                   help="panel port (default: 6007; the next free one if taken; 0 picks any free one)")
    p.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=True,
                   help="also start TensorBoard on the same logdir (default: yes)")
    p.add_argument("--tensorboard-port", type=_port, default=6006,
                   help="TensorBoard's port (default: 6006; the next free one if taken)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a host name the panel may be reached by besides IP addresses and localhost "
                        "(e.g. behind a proxy); repeatable")


def add_panel_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "panel", help="serve the retrace panel (and TensorBoard) for a logdir",
        description="Serve the jitflow panel for LOGDIR: every retrace with its reason and advice, "
                    "trace timelines and op profiles, read from the event files with TensorBoard's "
                    "loaders. Starts `tensorboard --logdir LOGDIR` alongside unless --no-tensorboard "
                    "(its output goes to LOGDIR/tensorboard.log; only its errors are shown). "
                    "Ctrl-C, SIGTERM or SIGHUP stops both; TensorBoard also dies if the panel is killed.")
    p.add_argument("--logdir", required=True, help="directory of event files (runs are its subdirectories)")
    add_serving_arguments(p)
    p.set_defaults(func=run_panel)
    return p


def _say(message: str) -> None:
    print(f"jitflow panel: {message}", file=sys.stderr, flush=True)


def _choose_port(host: str, wanted: int, what: str) -> Optional[int]:
    from jitflow.webui.server import pick_port  # lazy: heavy deps load per command
    try:
        port = pick_port(host, wanted)
    except OSError as e:
        _say(f"cannot listen for {what} on {host}: {e.strerror or e}")
        return None
    if wanted and port != wanted:
        _say(f"port {wanted} is taken (another {what}?); using {port} for {what}")
    return port


def _profile_plugin_missing() -> bool:
    import importlib.util
    return importlib.util.find_spec("tensorboard_plugin_profile") is None


def run_panel(args: argparse.Namespace) -> int:
    from jitflow.webui import create_app, hosts  # lazy: heavy deps load per command
    from jitflow.webui.server import PanelServer, TensorBoardProcess, allowed_hosts  # lazy: heavy deps load per command

    logdir = os.path.abspath(os.path.expanduser(args.logdir))
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        _say(f"--logdir {args.logdir!r} is not a directory")
        return 2
    if not os.path.exists(logdir):
        _say(f"{logdir} does not exist yet; runs appear once it is written")
    warning = hosts.reachable_hint(args.host)
    if warning:
        _say("WARNING: " + warning)

    stop = threading.Event()

    def _on_signal(signum, frame):  # noqa: ARG001
        stop.set()

    stop_signals = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {sig: signal.signal(sig, _on_signal) for sig in stop_signals}
    tensorboard: Optional[TensorBoardProcess] = None
    panel: Optional[PanelServer] = None
    try:
        panel_port = _choose_port(args.host, args.port, "the panel")
        tb_port = _choose_port(args.host, args.tensorboard_port, "TensorBoard") if args.tensorboard else None
        if panel_port is None or (args.tensorboard and tb_port is None):
            return 1
        if tb_port is not None and tb_port == panel_port:   # both defaults moved onto the same free port
            tb_port = _choose_port(args.host, tb_port + 1, "TensorBoard")
        app = create_app(logdir, {"TENSORBOARD_PORT": tb_port,
                                  "ALLOWED_HOSTS": allowed_hosts(args.host, args.allow_host)})
        try:
            panel = PanelServer(app, host=args.host, port=panel_port)
        except OSError as e:
            _say(f"cannot listen on {args.host}:{panel_port}: {e.strerror or e}")
            return 1
        if tb_port is not None:
            if _profile_plugin_missing():
                _say("TensorBoard will have no Profile tab: tensorboard-plugin-profile is not installed "
                     f"in this environment ({sys.executable} -m pip install tensorboard-plugin-profile)")
            tensorboard = TensorBoardProcess(logdir, host=args.host, port=tb_port)
        panel.start()
        print(f"jitflow panel: {panel.url}", flush=True)
        if tensorboard is not None:
            print(f"TensorBoard:   {tensorboard.url}   (its log: {tensorboard.log_path})", flush=True)
        print(f"logdir:        {logdir}\n(Ctrl-C to stop)", flush=True)
        reported = False
        while not stop.wait(0.5):
            if tensorboard is None or reported:
                continue
            for line in tensorboard.new_errors():
                _say(f"TensorBoard: {line}")
            if tensorboard.poll() is not None:
                reported = True
                _say(f"TensorBoard exited with code {tensorboard.poll()}; the panel keeps running. "
                     f"Last lines of {tensorboard.log_path}:\n{tensorboard.log_tail()}")
        print("jitflow panel: stopping", flush=True)
        return 0
    finally:
        if panel is not None:
            panel.stop()
        if tensorboard is not None:
            tensorboard.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# -- jitflow demo ---------------------------------------------------------------------------
def add_demo_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "demo", help="train a small model, write a full logdir, and open the panel and TensorBoard",
        description="Train an MLP with a jf.function train step on synthetic data, writing loss/accuracy "
                    "scalars, weight histograms, the graph, a profiled trace and a deliberate retrace to "
                    "a new run directory LOGDIR/<date>-<time>; then serve the jitflow panel and "
                    "TensorBoard on LOGDIR (unless --no-serve), so earlier runs appear beside it.")
    p.add_argument("--logdir", default="runs/demo",
                   help="parent of the run directories (default: runs/demo)")
    p.add_argument("--steps", type=_positive, default=200, help="training steps (default: 200)")
    p.add_argument("--serve", action=argparse.BooleanOptionalAction, default=True,
                   help="after training, serve the panel and TensorBoard (default: yes)")
    add_serving_arguments(p)
    p.set_defaults(func=run_demo)
    return p


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def run_demo(args: argparse.Namespace) -> int:
    from jitflow.demo import new_run_dir, train  # lazy: heavy deps load per command
    if os.path.exists(args.logdir) and not os.path.isdir(args.logdir):
        print(f"jitflow demo: --logdir {args.logdir!r} is not a directory", file=sys.stderr)
        return 2
    run_dir = new_run_dir(args.logdir)
    try:
        result = train(run_dir, steps=args.steps)
    except KeyboardInterrupt:
        print("\njitflow demo: interrupted", file=sys.stderr)
        return 130
    traces = "1 trace" if result.traces == 1 else f"{result.traces} traces"
    print(f"trained {result.steps} steps: loss {result.final_loss:.4f}, accuracy {result.final_accuracy:.3f}; "
          f"{traces} of the train step (see why in the panel)")
    print(f"run:    {os.path.abspath(result.logdir)}")
    if not args.serve:
        return 0
    panel_args = argparse.Namespace(**{**vars(args), "logdir": args.logdir})
    return run_panel(panel_args)


# -- jitflow inspect ------------------------------------------------------------------------
def add_inspect_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "inspect", help="summarise a logdir in the terminal",
        description="Print the runs of LOGDIR with their scalar tags and last values, the traced "
                    "functions with every retrace reason, and the slowest ops of each exported trace.")
    p.add_argument("logdir", help="directory of event files")
    p.add_argument("--top", type=_positive, default=5, help="ops to list per exported trace (default: 5)")
    p.set_defaults(func=run_inspect)
    return p


def run_inspect(args: argparse.Namespace) -> int:
    from jitflow.report import report  # lazy: heavy deps load per command
    if not os.path.isdir(args.logdir):
        print(f"jitflow inspect: {args.logdir!r} is not a directory", file=sys.stderr)
        return 2
    found = report(args.logdir, sys.stdout, top_ops=args.top)
    return 0 if found else 1


# -- jitflow saved-model (issue 20) ---------------------------------------------------------
def add_saved_model_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "saved-model", help="inspect a SavedModel (as saved_model_cli does) or view its graph",
        description="Inspect a SavedModel directory written by jf.saved_model.save or by TensorFlow.")
    sub = p.add_subparsers(dest="saved_model_command", metavar="SUBCOMMAND")
    show = sub.add_parser("show", help="print tag-sets, signatures, ops and concrete functions",
                          description="Print what `saved_model_cli show` prints for the same options.")
    show.add_argument("--dir", required=True, help="the SavedModel directory")
    show.add_argument("--all", action="store_true", help="every signature, the ops, and the concrete functions")
    show.add_argument("--tag_set", help="comma-separated tags of one MetaGraphDef (e.g. serve)")
    show.add_argument("--signature_def", help="one signature's inputs and outputs (needs --tag_set)")
    show.set_defaults(func=run_saved_model_show)
    logdir = sub.add_parser("to-logdir", help="write the SavedModel's graph to an event file for TensorBoard",
                            description="Write the SavedModel's functions as one graph (each function under its own "
                                        "name scope) to an event file in LOGDIR; open it with tensorboard --logdir.")
    logdir.add_argument("--dir", required=True, help="the SavedModel directory")
    logdir.add_argument("--logdir", required=True, help="where to write the event file")
    logdir.add_argument("--tag_set", help="comma-separated tags of one MetaGraphDef (default: serve)")
    logdir.set_defaults(func=run_saved_model_to_logdir)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])
    return p


def run_saved_model_show(args: argparse.Namespace) -> int:
    from jitflow.runtime.saved_model.show import show  # lazy: loads only for the `saved-model` command
    if args.signature_def and not args.tag_set:
        print("jitflow saved-model show: --signature_def needs --tag_set", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(show(args.dir, tag_set=args.tag_set, signature_def=args.signature_def, all=args.all))
    except (OSError, ValueError) as e:
        print(f"jitflow saved-model show: {e}", file=sys.stderr)
        return 1
    return 0


def run_saved_model_to_logdir(args: argparse.Namespace) -> int:
    from jitflow import summary  # lazy: loads only for the `saved-model` command
    from jitflow.runtime.saved_model.graph_view import graph_def  # lazy: loads only for the `saved-model` command
    try:
        graph = graph_def(args.dir, args.tag_set.split(",") if args.tag_set else None)
    except (OSError, ValueError) as e:
        print(f"jitflow saved-model to-logdir: {e}", file=sys.stderr)
        return 1
    writer = summary.create_file_writer(args.logdir)
    with writer.as_default():
        summary.graph(graph)
    writer.close()
    print(f"wrote the graph of {args.dir} ({len(graph.node)} nodes) to {os.path.abspath(args.logdir)}; "
          f"view it with: tensorboard --logdir {args.logdir}")
    return 0


# -- jitflow capture ------------------------------------------------------------------------
def add_capture_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "capture", help="capture a profile from running jitflow processes (TensorBoard's CAPTURE PROFILE)",
        description="Ask the profiler server(s) at SERVICE_ADDR (started in the training process with "
                    "jf.profiler.experimental.server.start(port)) for DURATION_MS of profile and write it to "
                    "LOGDIR/plugins/profile/<session>/, one <host>.xplane.pb per worker, where TensorBoard's "
                    "Profile tab finds it.")
    p.add_argument("service_addr", nargs="?", help="grpc://host:port, comma-separated for several workers")
    p.add_argument("--workers-in", metavar="JOB_LOGDIR",
                   help="capture every worker that announced its profiler server under JOB_LOGDIR "
                        "(jf.profiler.experimental.server.start_worker(logdir)) instead of SERVICE_ADDR")
    p.add_argument("--logdir", required=True, help="TensorBoard logdir to write the session under")
    p.add_argument("--duration-ms", type=int, default=2000, help="how long to record (default: 2000)")
    p.add_argument("--num-retry", type=int, default=2, help="retries while a server is unavailable (default: 2)")
    p.add_argument("--host-tracer-level", type=int, default=2, choices=range(4),
                   help="0: steps and runtime events only; 1-3: also every function and op (default: 2)")
    p.add_argument("--delay-ms", type=int, default=0, help="start recording this long from now (default: 0)")
    p.set_defaults(func=run_capture)
    return p


def run_capture(args: argparse.Namespace) -> int:
    from jitflow.tracer import client, job, profiler  # lazy: gRPC loads only for the `capture` command
    try:
        if (args.service_addr is None) == (args.workers_in is None):
            raise ValueError("give either SERVICE_ADDR or --workers-in JOB_LOGDIR (one of them)")
        if args.workers_in is not None:
            args.service_addr = job.worker_addresses(args.workers_in)
        options = profiler.ProfilerOptions(host_tracer_level=args.host_tracer_level, delay_ms=args.delay_ms or None)
        session = client.trace(args.service_addr, args.logdir, args.duration_ms,
                               num_tracing_attempts=max(0, args.num_retry) + 1, options=options)
    except (ValueError, TypeError, OSError, client.CaptureError) as e:
        print(f"jitflow capture: {e}", file=sys.stderr)
        return 1
    print(f"captured {args.duration_ms} ms from {args.service_addr} into {session}")
    return 0


# -- the command ----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitflow", description="jitflow: a TensorFlow-2-style graph runtime on numba, with tools.")
    parser.add_argument("--version", action="version", version=f"jitflow {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_parser(subparsers)
    add_panel_parser(subparsers)
    add_inspect_parser(subparsers)
    add_saved_model_parser(subparsers)
    add_capture_parser(subparsers)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
