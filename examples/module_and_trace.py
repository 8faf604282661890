"""A jf.Module with name scopes, traced and exported for TensorBoard (seeds 000/001).

Run: python examples/module_and_trace.py [--logdir runs/module_and_trace]
Then: tensorboard --logdir runs/module_and_trace   (Graphs: tag "demomodule"; Profile tab)
"""
import argparse
import datetime
import os

import jitflow as jf


class DemoModule(jf.Module):
    def __init__(self, init_value=jf.constant(0.0), name=None):
        super(DemoModule, self).__init__(name=name)
        with self.name_scope:  # like jf.name_scope("demo_module")
            self.x = jf.Variable(init_value, dtype=jf.float32, trainable=True)

    @jf.function(input_signature=[jf.TensorSpec(shape=[], dtype=jf.float32)])
    def addprint(self, a):
        with self.name_scope:
            self.x.assign_add(a)
            jf.print(self.x)
            return self.x


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/module_and_trace")
    args = parser.parse_args(argv)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    logdir = os.path.join(args.logdir, stamp)
    writer = jf.summary.create_file_writer(logdir)

    # The seeds' code, as written for TensorFlow 2.0 (profiler_outdir in trace_export).
    jf.summary.trace_on(graph=True, profiler=True)
    demo = DemoModule(init_value=jf.constant(0.0))
    result = demo.addprint(jf.constant(5.0))
    with writer.as_default():
        jf.summary.trace_export(name="demomodule", step=0, profiler_outdir=logdir)
    writer.close()

    print("result:", result.numpy())
    print("variables:", demo.variables)
    print("wrote", logdir)
    return logdir


if __name__ == "__main__":
    main()
