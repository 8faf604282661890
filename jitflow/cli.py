"""The `jitflow` command line.

    jitflow --version
    jitflow demo [--logdir runs/demo] [--steps 200] [--no-serve]
    jitflow panel --logdir runs [--host 127.0.0.1] [--port 6007]
                  [--tensorboard/--no-tensorboard] [--tensorboard-port 6006]
    jitflow inspect LOGDIR
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
def add_panel_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "panel", help="serve the retrace panel (and TensorBoard) for a logdir",
        description="Serve the jitflow panel for LOGDIR: every retrace with its reason and advice, "
                    "trace timelines and op profiles, read from the event files with TensorBoard's "
                    "loaders. Starts `tensorboard --logdir LOGDIR` alongside unless --no-tensorboard. "
                    "Ctrl-C (SIGINT) or SIGTERM stops both.")
    p.add_argument("--logdir", required=True, help="directory of event files (runs are its subdirectories)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to bind, for the panel and TensorBoard (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=6007, help="panel port (default: 6007; 0 picks a free one)")
    p.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=True,
                   help="also start TensorBoard on the same logdir (default: yes)")
    p.add_argument("--tensorboard-port", type=_port, default=6006,
                   help="TensorBoard's port, also used for the panel's links into it (default: 6006)")
    p.set_defaults(func=run_panel)
    return p


def run_panel(args: argparse.Namespace) -> int:
    from jitflow.webui import create_app
    from jitflow.webui.server import PanelServer, TensorBoardProcess, trusted_hosts

    logdir = os.path.abspath(os.path.expanduser(args.logdir))
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        print(f"jitflow panel: --logdir {args.logdir!r} is not a directory", file=sys.stderr)
        return 2
    if not os.path.exists(logdir):
        print(f"jitflow panel: {logdir} does not exist yet; runs appear once it is written", file=sys.stderr)

    stop = threading.Event()

    def _on_signal(signum, frame):  # noqa: ARG001
        stop.set()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    tensorboard: Optional[TensorBoardProcess] = None
    panel: Optional[PanelServer] = None
    try:
        app = create_app(logdir, {"TENSORBOARD_PORT": args.tensorboard_port,
                                  "TRUSTED_HOSTS": trusted_hosts(args.host)})
        try:
            panel = PanelServer(app, host=args.host, port=args.port)
        except OSError as e:
            print(f"jitflow panel: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
            return 1
        if args.tensorboard:
            tensorboard = TensorBoardProcess(logdir, host=args.host, port=args.tensorboard_port)
        panel.start()
        print(f"jitflow panel: {panel.url}", flush=True)
        if tensorboard is not None:
            print(f"TensorBoard:   {tensorboard.url}", flush=True)
        print(f"logdir:        {logdir}\n(Ctrl-C to stop)", flush=True)
        reported = False
        while not stop.wait(0.5):
            if tensorboard is not None and not reported and tensorboard.poll() is not None:
                reported = True
                print(f"jitflow panel: TensorBoard exited with code {tensorboard.poll()}; "
                      "the panel keeps running", file=sys.stderr, flush=True)
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
                    "LOGDIR; then serve the jitflow panel and TensorBoard on it (unless --no-serve).")
    p.add_argument("--logdir", default="runs/demo", help="where to write (default: runs/demo)")
    p.add_argument("--steps", type=_positive, default=200, help="training steps (default: 200)")
    p.add_argument("--serve", action=argparse.BooleanOptionalAction, default=True,
                   help="after training, serve the panel and TensorBoard (default: yes)")
    p.add_argument("--host", default="127.0.0.1", help="interface for the servers (default: 127.0.0.1)")
    p.add_argument("--port", type=_port, default=6007, help="panel port (default: 6007)")
    p.add_argument("--tensorboard-port", type=_port, default=6006, help="TensorBoard port (default: 6006)")
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
    from jitflow.demo import train
    try:
        result = train(args.logdir, steps=args.steps)
    except KeyboardInterrupt:
        print("\njitflow demo: interrupted", file=sys.stderr)
        return 130
    print(f"trained {result.steps} steps: loss {result.final_loss:.4f}, accuracy {result.final_accuracy:.3f}; "
          f"{result.traces} traces of the train step (see why in the panel)")
    print(f"logdir: {os.path.abspath(result.logdir)}")
    if not args.serve:
        return 0
    panel_args = argparse.Namespace(logdir=args.logdir, host=args.host, port=args.port, tensorboard=True,
                                    tensorboard_port=args.tensorboard_port)
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
    from jitflow.report import report
    if not os.path.isdir(args.logdir):
        print(f"jitflow inspect: {args.logdir!r} is not a directory", file=sys.stderr)
        return 2
    found = report(args.logdir, sys.stdout, top_ops=args.top)
    return 0 if found else 1


# -- jitflow capture ------------------------------------------------------------------------
def add_capture_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "capture", help="capture a profile from running jitflow processes (TensorBoard's CAPTURE PROFILE)",
        description="Ask the profiler server(s) at SERVICE_ADDR (started in the training process with "
                    "jf.profiler.experimental.server.start(port)) for DURATION_MS of profile and write it to "
                    "LOGDIR/plugins/profile/<session>/, one <host>.xplane.pb per worker, where TensorBoard's "
                    "Profile tab finds it.")
    p.add_argument("service_addr", help="grpc://host:port, comma-separated for several workers")
    p.add_argument("--logdir", required=True, help="TensorBoard logdir to write the session under")
    p.add_argument("--duration-ms", type=int, default=2000, help="how long to record (default: 2000)")
    p.add_argument("--num-retry", type=int, default=2, help="retries while a server is unavailable (default: 2)")
    p.add_argument("--host-tracer-level", type=int, default=2, choices=range(4),
                   help="0: steps and runtime events only; 1-3: also every function and op (default: 2)")
    p.add_argument("--delay-ms", type=int, default=0, help="start recording this long from now (default: 0)")
    p.set_defaults(func=run_capture)
    return p


def run_capture(args: argparse.Namespace) -> int:
    from jitflow.tracer import client, profiler
    try:
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
