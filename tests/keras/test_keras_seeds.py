"""The seed notes' Keras cells (001, 004), ported with `tf.` → `jf.`, give the seeds' results."""
from __future__ import annotations

import jitflow as jf
from keras_data import mnist_like


def test_seed001_model_name_and_name_scope():
    jf.keras.backend.clear_session()
    from jitflow.keras import layers, models
    model = models.Sequential()
    model.add(layers.Dense(4, input_shape=(10,)))
    model.add(layers.Dense(2))
    model.add(layers.Dense(1))
    assert model.name == "sequential"
    assert model.name_scope() == "sequential"
    assert [type(m).__name__ for m in model.submodules] == ["Dense", "Dense", "Dense"]


def test_seed004_custom_loss_class():
    class MeanSquaredError(jf.keras.losses.Loss):
        def call(self, y_true, y_pred):
            return jf.reduce_mean(jf.square(y_pred - y_true))

    assert float(MeanSquaredError()(jf.constant([[1.0, 2.0]]), jf.constant([[2.0, 4.0]]))) == 2.5


def test_seed004_graph_mode_training_loop_with_a_subclassed_cnn():
    jf.keras.backend.clear_session()

    class CNN(jf.keras.Model):
        def __init__(self):
            super().__init__()
            self.conv1 = jf.keras.layers.Conv2D(filters=8, kernel_size=[5, 5], padding="same", activation=jf.nn.relu)
            self.pool1 = jf.keras.layers.MaxPool2D(pool_size=[2, 2], strides=2)
            self.flatten = jf.keras.layers.Reshape(target_shape=(14 * 14 * 8,))
            self.dense2 = jf.keras.layers.Dense(units=10)

        def call(self, inputs):
            x = self.pool1(self.conv1(inputs))
            return jf.nn.softmax(self.dense2(self.flatten(x)))

    x, y = mnist_like(96, seed=2)
    model = CNN()
    optimizer = jf.keras.optimizers.Adam(learning_rate=0.003)

    @jf.function
    def train_step(images, labels):
        with jf.GradientTape() as tape:
            predictions = model(images)
            loss = jf.keras.losses.sparse_categorical_crossentropy(labels, predictions)
            loss = jf.reduce_mean(loss)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    losses = [float(train_step(x[i:i + 32], y[i:i + 32])) for _ in range(4) for i in range(0, 96, 32)]
    assert losses[-1] < 0.5 * losses[0]
    # the first call creates the variables (layers, Adam slots), so it traces twice, as TF does
    assert train_step.experimental_get_tracing_count() == 2
    accuracy = jf.keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(y, model(x))
    assert float(accuracy.result()) >= 0.9
