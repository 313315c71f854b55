"""Logistic regression with a custom TensorFlow training loop."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(0)
rng = np.random.default_rng(14)
x_train = rng.normal(size=(256, 4)).astype("float32")
y_train = (x_train @ np.array([1.0, -1.0, 0.5, 0.0]) > 0).astype("float32").reshape(-1, 1)
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(32)

model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(learning_rate=0.5)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(3):
    for x_batch, y_batch in train_ds:
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f}")

probabilities = tf.sigmoid(model(x_train)).numpy()
print("train accuracy:", float(np.mean((probabilities > 0.5) == y_train)))
