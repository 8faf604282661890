"""`jf.optimizers`: optimizers updating variables with jitflow ops (`tf.keras.optimizers`).

    >>> import jitflow as jf
    >>> v = jf.Variable(1.0)
    >>> opt = jf.optimizers.SGD(learning_rate=0.1)
    >>> with jf.GradientTape() as tape:
    ...     loss = v * v
    >>> opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))  # doctest: +ELLIPSIS
    <...>
    >>> round(float(v.numpy()), 6)
    0.8
"""
from jitflow.runtime.training.optimizers import Adam, Optimizer, SGD

__all__ = ["Optimizer", "SGD", "Adam"]
