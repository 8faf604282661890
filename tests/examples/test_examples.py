"""Every example runs as a script, and what it writes reads back with TensorBoard's loaders."""
import glob
import os
import subprocess
import sys

from tensorboard.backend.event_processing import plugin_event_accumulator as pea

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def _run(script, tmp_path, *args):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _panel_functions(logdir):
    """What the jitflow panel shows for each run under `logdir`: run -> {function: summary}."""
    from jitflow.webui import create_app
    client = create_app(str(logdir)).test_client()
    out = {}
    for run in client.get("/api/runs").get_json()["runs"]:
        data = client.get(run["links"]["functions"].replace("/runs/", "/api/runs/", 1)).get_json()
        assert data["errors"] == []
        out[run["run"]] = {f["function"]: f for f in data["functions"]}
    return out


def _tags(logdir):
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def test_retracing_prints_the_seed_sequence_and_logs_every_trace(tmp_path):
    out = _run("retracing.py", tmp_path)
    assert out.count("The function is running in Python") == 6
    assert "#2: arg 'x': dtype int32 → float32" in out
    assert "#4: arg 'x': Python int 1 → 2" in out
    acc = _tags(tmp_path / "runs" / "retracing")
    assert "jitflow/trace/f" in acc.Tags()["tensors"]
    assert len(acc.Tensors("jitflow/trace/f")) == 6


def test_autograph_rules(tmp_path):
    out = _run("autograph_rules.py", tmp_path)
    assert "square_if_positive(3.0) = 9.0" in out and "square_if_positive(-3.0) = 0.0" in out
    assert "ag__.if_stmt" in out
    assert "raise ValueError" in out
    assert _tags(tmp_path / "runs" / "autograph_rules").Graph() is not None


def test_module_and_trace_writes_graph_step_stats_and_profile(tmp_path):
    out = _run("module_and_trace.py", tmp_path)
    assert out.splitlines()[0] == "5"  # jf.print inside the traced method
    (run,) = glob.glob(str(tmp_path / "runs" / "module_and_trace" / "*"))
    acc = _tags(run)
    assert acc.PluginTagToContent("graph_run_metadata") == {"demomodule": b"1"}
    assert glob.glob(os.path.join(run, "plugins", "profile", "*", "*.xplane.pb"))
    assert glob.glob(os.path.join(run, "plugins", "profile", "*", "*.trace.json.gz"))
    # traced before the writer was the default: the record still reaches the panel
    (fns,) = _panel_functions(tmp_path / "runs" / "module_and_trace").values()
    assert fns["DemoModule.addprint"]["traces"] >= 1


def test_tensorboard_training_converges_and_logs(tmp_path):
    out = _run("tensorboard_training.py", tmp_path, "--steps", "60")
    assert "final loss" in out
    acc = _tags(tmp_path / "runs" / "tensorboard_training")
    assert len(acc.Tensors("loss")) == 60
    assert [e.step for e in acc.Tensors("MyScalar")][:3] == [0, 1, 2]
    assert "model_trace" in acc.Tags()["tensors"]
    assert acc.Tensors("w")
    # the first trace happens before any writer is the default; the panel still shows it, and
    # counts every call
    fns = _panel_functions(tmp_path / "runs" / "tensorboard_training")["."]
    step = fns["main.<locals>.train_step"]
    assert step["traces"] >= 1 and step["calls"] == 60


def test_readme_quick_start_runs_as_documented(tmp_path):
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "quickstart.py").write_text(code)
    proc = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["tracing with 0.1", "tracing with 0.2", "arg 'lr': Python float 0.1 → 0.2"]
    acc = _tags(tmp_path / "runs" / "quickstart")
    assert {"loss", "step"} <= set(acc.Tags()["tensors"])


def test_keras_cnn_trains_and_writes_train_and_validation_runs(tmp_path):
    out = _run("keras_cnn.py", tmp_path, "--samples", "256", "--epochs", "3", "--logdir", "logs")
    assert "Total params: 225,034" in out
    accuracy = float(out.split("final val_accuracy: ")[1].split()[0])
    assert accuracy >= 0.9
    train, validation = _tags(tmp_path / "logs" / "train"), _tags(tmp_path / "logs" / "validation")
    assert {"epoch_loss", "epoch_accuracy", "batch_loss", "sequential/conv2d/kernel/histogram"} <= set(
        train.Tags()["tensors"])
    assert {"epoch_loss", "epoch_accuracy"} <= set(validation.Tags()["tensors"])
    assert glob.glob(str(tmp_path / "logs" / "train" / "plugins" / "profile" / "*" / "*.xplane.pb"))
