"""Classes the seed notes define, as written there with `tf.` → `jf.`, shared by tests."""
import jitflow as jf


def make_demo_module():
    """Seed 000's DemoModule, In [57] (the same class appears in seeds 001 and 004)."""
    class DemoModule(jf.Module):
        def __init__(self, init_value=jf.constant(0.0), name=None):
            super(DemoModule, self).__init__(name=name)
            with self.name_scope:  # same as: with jf.name_scope("demo_module")
                self.x = jf.Variable(init_value, dtype=jf.float32, trainable=True)

        @jf.function(input_signature=[jf.TensorSpec(shape=[], dtype=jf.float32)])
        def addprint(self, a):
            with self.name_scope:
                self.x.assign_add(a)
                jf.print(self.x)
                return self.x
    return DemoModule
