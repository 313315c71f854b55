"""Write the TensorFlow training corpus of tests/training (run from anywhere).

    python tests/training/make_training_corpus.py          # (re)write every notebook and script
    python tests/training/make_training_corpus.py --check  # also check cases.py against the files
    python tests/training/make_training_corpus.py --run    # also run every case and time it

Each case is a small, ordinary single-device TensorFlow program on tiny synthetic data (numpy,
generated inline) that runs top to bottom on a CPU in a few seconds. The notebooks are written
without outputs and with deterministic cell ids; the scripts are either jupytext "percent" scripts
(`# %%` markers) or unmarked ones whose cells are the blank-line separated statement groups.
What each case is (kind, models, training cell) is recorded in cases.py.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
KERNEL = {"name": "python3", "language": "python", "display_name": "Python 3"}

Cell = tuple[str, str]  # ("md" | "code", source)


def md(text: str) -> Cell:
    return ("md", text.strip("\n"))


def code(text: str) -> Cell:
    return ("code", text.strip("\n"))


# --------------------------------------------------------------------------------------------
# Keras compile + fit
# --------------------------------------------------------------------------------------------

KERAS_SEQUENTIAL_EARLYSTOP = [
    md("""
# Binary classifier on synthetic tabular data

A small dense network, trained with early stopping on a held-out split.
"""),
    code("""
import keras
import numpy as np
from keras import layers

keras.utils.set_random_seed(0)
"""),
    md("## Data"),
    code("""
rng = np.random.default_rng(0)
X = rng.normal(size=(256, 8)).astype("float32")
w_true = rng.normal(size=(8,))
y = (X @ w_true + 0.1 * rng.normal(size=256) > 0).astype("float32")

X_train, X_val = X[:200], X[200:]
y_train, y_val = y[:200], y[200:]
print(X_train.shape, X_val.shape, y_train.mean())
"""),
    md("## Model"),
    code("""
model = keras.Sequential(
    [
        keras.Input(shape=(8,)),
        layers.Dense(16, activation="relu"),
        layers.Dense(1, activation="sigmoid"),
    ]
)
model.compile(
    optimizer=keras.optimizers.Adam(learning_rate=1e-2),
    loss="binary_crossentropy",
    metrics=["accuracy"],
)
model.summary()
"""),
    md("## Training"),
    code("""
early_stop = keras.callbacks.EarlyStopping(
    monitor="val_loss", patience=2, restore_best_weights=True
)
history = model.fit(
    X_train,
    y_train,
    validation_data=(X_val, y_val),
    epochs=3,
    batch_size=32,
    callbacks=[early_stop],
    verbose=2,
)
"""),
    md("## Evaluation"),
    code("""
val_loss, val_acc = model.evaluate(X_val, y_val, verbose=0)
print(f"val loss {val_loss:.3f}  val acc {val_acc:.3f}")
print("epochs run:", len(history.history["loss"]))
"""),
]

KERAS_FUNCTIONAL_VALSPLIT = [
    md("""
# Three blobs, functional API

Classify points drawn around three random centres.
"""),
    code("""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(0)
np.random.seed(0)
"""),
    code("""
n_classes = 3
centers = np.random.normal(scale=3.0, size=(n_classes, 4))
labels = np.random.randint(0, n_classes, size=256)
features = (centers[labels] + np.random.normal(size=(256, 4))).astype("float32")
print(features.shape, np.bincount(labels))
"""),
    md("## Functional model"),
    code("""
inputs = keras.Input(shape=(4,), name="features")
x = keras.layers.Dense(32, activation="relu")(inputs)
x = keras.layers.Dropout(0.1)(x)
outputs = keras.layers.Dense(n_classes, activation="softmax")(x)
classifier = keras.Model(inputs, outputs, name="blob_classifier")
"""),
    code("""
classifier.compile(
    optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
)
history = classifier.fit(
    features, labels, validation_split=0.2, epochs=3, batch_size=32, verbose=2
)
"""),
    code("""
print("final val accuracy:", round(history.history["val_accuracy"][-1], 3))
probs = classifier.predict(features[:5], verbose=0)
print(probs.argmax(axis=1), labels[:5])
"""),
]

KERAS_SUBCLASS_FIT = [
    md("""
# Regression with a subclassed model

Fit a noisy sine with a small MLP written as a `keras.Model` subclass.
"""),
    code("""
import keras
import numpy as np
import tensorflow as tf
"""),
    code("""
rng = np.random.default_rng(1)
x_all = rng.uniform(-3, 3, size=(256, 1)).astype("float32")
y_all = (np.sin(x_all) + 0.1 * rng.normal(size=(256, 1))).astype("float32")
x_train, y_train = x_all[:224], y_all[:224]
x_test, y_test = x_all[224:], y_all[224:]
"""),
    md("## Model"),
    code('''
class MLPRegressor(keras.Model):
    """Two hidden layers and a linear output."""

    def __init__(self, hidden=32, **kwargs):
        super().__init__(**kwargs)
        self.dense1 = keras.layers.Dense(hidden, activation="tanh")
        self.dense2 = keras.layers.Dense(hidden, activation="tanh")
        self.out = keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.dense2(self.dense1(inputs)))
'''),
    code('''
class PrintEpoch(keras.callbacks.Callback):
    """Print one short line per epoch instead of a progress bar."""

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        print(f"epoch {epoch + 1}: loss={logs['loss']:.4f} mae={logs['mae']:.4f}")
'''),
    code("""
net = MLPRegressor(hidden=32)
net.compile(
    optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
    loss="mse",
    metrics=["mae"],
)
"""),
    code("""
history = net.fit(x_train, y_train, epochs=3, batch_size=32, callbacks=[PrintEpoch()], verbose=0)
"""),
    md("## Evaluation"),
    code("""
test_mse, test_mae = net.evaluate(x_test, y_test, verbose=0)
print(f"test mse {test_mse:.4f}, mae {test_mae:.4f}")
print(tf.reduce_mean(net(x_test[:8])).numpy())
"""),
]

KERAS_SUBCLASS_BASE_FACTORY = [
    md("""
# A small model family

`Base` holds what all our tabular models share; `Net` adds the feature extractor;
`build_model` is the one place that knows how to make a fresh model.
"""),
    code("""
import numpy as np
from tensorflow import keras

keras.utils.set_random_seed(0)
"""),
    code("""
rng = np.random.default_rng(2)
x = rng.normal(size=(256, 6)).astype("float32")
y = ((x[:, 0] * x[:, 1] + x[:, 2]) > 0).astype("float32")[:, None]
"""),
    md("## Model family"),
    code('''
class Base(keras.Model):
    """Common sigmoid head; subclasses provide `features`."""

    def __init__(self, n_out=1, **kwargs):
        super().__init__(**kwargs)
        self.head = keras.layers.Dense(n_out, activation="sigmoid")

    def features(self, x, training=False):
        raise NotImplementedError

    def call(self, x, training=False):
        return self.head(self.features(x, training=training))
'''),
    code("""
class Net(Base):
    def __init__(self, width=16, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(width, activation="relu")
        self.drop = keras.layers.Dropout(0.2)

    def features(self, x, training=False):
        return self.drop(self.hidden(x), training=training)
"""),
    code("""
def build_model():
    return Net()
"""),
    md("## Training"),
    code("""
model = build_model()
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
"""),
    code("""
history = model.fit(x, y, epochs=3, batch_size=32, verbose=2)
"""),
    code("""
loss, acc = model.evaluate(x, y, verbose=0)
print(f"train loss {loss:.3f} acc {acc:.3f}")
"""),
]

KERAS_FIT_TFDATA = [
    md("""
# Tiny image classifier fed by `tf.data`

8x8 single-channel "images": class 1 has a bright square in the upper-left corner.
"""),
    code("""
import numpy as np
import tensorflow as tf

tf.random.set_seed(0)
"""),
    code("""
rng = np.random.default_rng(3)
images = rng.uniform(0, 0.5, size=(256, 8, 8, 1)).astype("float32")
classes = rng.integers(0, 2, size=256)
images[classes == 1, :3, :3, :] += 0.5
x_train, x_val = images[:192], images[192:]
y_train, y_val = classes[:192], classes[192:]
"""),
    md("## Input pipeline"),
    code("""
BATCH = 32
train_ds = (
    tf.data.Dataset.from_tensor_slices((x_train, y_train))
    .shuffle(buffer_size=len(x_train), seed=0)
    .batch(BATCH)
    .prefetch(tf.data.AUTOTUNE)
)
val_ds = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(BATCH)
"""),
    md("## Model"),
    code("""
model = tf.keras.Sequential(
    [
        tf.keras.Input(shape=(8, 8, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(2),
    ]
)
model.compile(
    optimizer=tf.keras.optimizers.Adam(1e-2),
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
"""),
    code("""
history = model.fit(train_ds, validation_data=val_ds, epochs=2)
"""),
    code("""
loss, acc = model.evaluate(val_ds, verbose=0)
print(f"validation accuracy: {acc:.3f}")
"""),
]

# --------------------------------------------------------------------------------------------
# Custom training loops (GradientTape + optimizer.apply_gradients)
# --------------------------------------------------------------------------------------------

CUSTOM_LOOP_TF_FUNCTION = [
    md("""
# Custom training loop with a compiled step

The classic `@tf.function` train step, driven by an epoch loop over a `tf.data` pipeline.
"""),
    code("""
import keras
import numpy as np
import tensorflow as tf

tf.random.set_seed(0)
"""),
    code("""
rng = np.random.default_rng(4)
x_data = rng.normal(size=(256, 10)).astype("float32")
y_data = (x_data[:, :5].sum(axis=1) > 0).astype("int64") + (x_data[:, 5] > 1).astype("int64")

train_ds = tf.data.Dataset.from_tensor_slices((x_data, y_data)).shuffle(256, seed=0).batch(32)
"""),
    code("""
model = keras.Sequential(
    [keras.Input(shape=(10,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.Adam(learning_rate=1e-2)
train_acc = keras.metrics.SparseCategoricalAccuracy()
"""),
    md("## Training step"),
    code("""
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_acc.update_state(y, logits)
    return loss
"""),
    code("""
EPOCHS = 3
for epoch in range(EPOCHS):
    train_acc.reset_state()
    losses = []
    for x, y in train_ds:
        losses.append(float(train_step(x, y)))
    print(f"epoch {epoch + 1}: loss={np.mean(losses):.4f} acc={float(train_acc.result()):.3f}")
"""),
    code("""
logits = model(x_data, training=False)
accuracy = np.mean(np.argmax(logits, axis=1) == y_data)
print(f"accuracy on all data: {accuracy:.3f}")
"""),
]

CUSTOM_LOOP_PLAIN_STEP = [
    md("""
# Linear regression, eager custom loop

Mini-batches are sliced by hand from numpy arrays; the update is a plain Python function.
"""),
    code("""
import numpy as np
import tensorflow as tf
from tensorflow import keras
"""),
    code("""
rng = np.random.default_rng(5)
n_samples = 256
X = rng.normal(size=(n_samples, 3)).astype("float32")
true_w = np.array([[1.5], [-2.0], [0.5]], dtype="float32")
Y = X @ true_w + 0.3 + 0.05 * rng.normal(size=(n_samples, 1)).astype("float32")
"""),
    code("""
linear = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(learning_rate=0.1)
mse = keras.losses.MeanSquaredError()
"""),
    code("""
def sgd_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = mse(yb, linear(xb))
    grads = tape.gradient(loss, linear.trainable_variables)
    opt.apply_gradients(zip(grads, linear.trainable_variables))
    return loss
"""),
    md("## Training"),
    code("""
batch_size = 32
for epoch in range(3):
    order = rng.permutation(n_samples)
    for start in range(0, n_samples, batch_size):
        idx = order[start : start + batch_size]
        loss = sgd_step(X[idx], Y[idx])
    print(f"epoch {epoch}: last batch loss {float(loss):.4f}")
"""),
    code("""
kernel, bias = linear.get_weights()
print("learned w:", kernel.ravel().round(2), "b:", bias.round(2))
"""),
]

CUSTOM_LOOP_INLINE = [
    md("""
# Inline training loop

Tape and optimizer update written straight into the loop body.
"""),
    code("""
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
"""),
    code("""
rng = np.random.default_rng(6)
xs = rng.uniform(-1, 1, size=(256, 2)).astype("float32")
ys = (xs[:, :1] ** 2 + 0.5 * xs[:, 1:]).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(256).batch(32)
"""),
    code("""
inp = keras.Input(shape=(2,))
hidden = keras.layers.Dense(16, activation="relu")(inp)
regressor = keras.Model(inp, keras.layers.Dense(1)(hidden))
opt = keras.optimizers.Adam(learning_rate=5e-3)
"""),
    md("## Training"),
    code("""
for epoch in range(3):
    epoch_loss = keras.metrics.Mean()
    for xb, yb in dataset:
        with tf.GradientTape() as tape:
            pred = regressor(xb, training=True)
            loss = tf.reduce_mean(tf.square(pred - yb))
        grads = tape.gradient(loss, regressor.trainable_weights)
        opt.apply_gradients(zip(grads, regressor.trainable_weights))
        epoch_loss.update_state(loss)
    print(f"epoch {epoch}: mse {float(epoch_loss.result()):.4f}")
"""),
    code("""
print("prediction at (0.5, 0.5):", float(regressor(np.array([[0.5, 0.5]], "float32"))[0, 0]))
"""),
]

CUSTOM_LOOP_SUBCLASS_MAP = [
    md("""
# Subclassed CNN, `tf.data` with preprocessing

Raw uint8 images are scaled and flipped in `Dataset.map`; a compiled step trains the model.
"""),
    code("""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(0)
"""),
    code("""
rng = np.random.default_rng(7)
raw_images = rng.integers(0, 128, size=(256, 8, 8, 1), dtype=np.uint8)
raw_labels = rng.integers(0, 2, size=256).astype("int32")
raw_images[raw_labels == 1, 2:6, 2:6, :] += 120
"""),
    code("""
def preprocess(image, label):
    image = tf.cast(image, tf.float32) / 255.0
    image = tf.image.random_flip_left_right(image)
    return image, label


train_ds = (
    tf.data.Dataset.from_tensor_slices((raw_images, raw_labels))
    .shuffle(256, seed=0)
    .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
    .batch(32)
)
"""),
    md("## Model"),
    code('''
class TinyConvNet(keras.Model):
    """Conv -> global pooling -> logits."""

    def __init__(self, num_classes=2):
        super().__init__()
        self.conv = keras.layers.Conv2D(8, 3, padding="same", activation="relu")
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.logits = keras.layers.Dense(num_classes)

    def call(self, x, training=False):
        return self.logits(self.pool(self.conv(x)))


convnet = TinyConvNet()
optimizer = keras.optimizers.Adam(1e-2)
loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
'''),
    code("""
@tf.function
def train_one_batch(images, labels):
    with tf.GradientTape() as tape:
        loss = loss_object(labels, convnet(images, training=True))
    gradients = tape.gradient(loss, convnet.trainable_variables)
    optimizer.apply_gradients(zip(gradients, convnet.trainable_variables))
    return loss
"""),
    md("## Training"),
    code("""
for epoch in range(2):
    total, batches = 0.0, 0
    for images, labels in train_ds:
        total += float(train_one_batch(images, labels))
        batches += 1
    print(f"epoch {epoch + 1}: mean loss {total / batches:.4f}")
"""),
    code("""
scaled = raw_images.astype("float32") / 255.0
predicted = np.argmax(convnet(scaled), axis=1)
print("train accuracy:", float(np.mean(predicted == raw_labels)))
"""),
]

CUSTOM_LOOP_GAN = [
    md("""
# A one-dimensional GAN

Two Keras models trained against each other in one compiled step: the generator learns to
produce samples that look like N(3, 0.5).
"""),
    code("""
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
"""),
    code("""
LATENT = 4
rng = np.random.default_rng(8)
real_samples = rng.normal(3.0, 0.5, size=(256, 1)).astype("float32")
real_ds = tf.data.Dataset.from_tensor_slices(real_samples).shuffle(256).batch(32)
"""),
    md("## Models"),
    code("""
generator = keras.Sequential(
    [keras.Input(shape=(LATENT,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
discriminator = keras.Sequential(
    [keras.Input(shape=(1,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
g_opt = keras.optimizers.Adam(1e-3)
d_opt = keras.optimizers.Adam(1e-3)
bce = keras.losses.BinaryCrossentropy(from_logits=True)
"""),
    code("""
@tf.function
def train_step(real):
    noise = tf.random.normal((tf.shape(real)[0], LATENT))
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(noise, training=True)
        real_logits = discriminator(real, training=True)
        fake_logits = discriminator(fake, training=True)
        d_loss = bce(tf.ones_like(real_logits), real_logits) + bce(
            tf.zeros_like(fake_logits), fake_logits
        )
        g_loss = bce(tf.ones_like(fake_logits), fake_logits)
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
    return d_loss, g_loss
"""),
    md("## Training"),
    code("""
for epoch in range(3):
    for real in real_ds:
        d_loss, g_loss = train_step(real)
    print(f"epoch {epoch}: d_loss={float(d_loss):.3f} g_loss={float(g_loss):.3f}")
"""),
    code("""
fake = generator(tf.random.normal((256, LATENT))).numpy()
print(f"generated mean {fake.mean():.2f} std {fake.std():.2f} (target 3.00 / 0.50)")
"""),
]

# --------------------------------------------------------------------------------------------
# TF1 graph-mode programs (to be refused)
# --------------------------------------------------------------------------------------------

TF1_SESSION_GRAPH = [
    md("""
# Linear regression, TF1 style

Graph mode: placeholders, a `GradientDescentOptimizer` train op and an explicit `Session`.
"""),
    code("""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(0)
"""),
    code("""
rng = np.random.default_rng(9)
X = rng.normal(size=(256, 3)).astype("float32")
Y = X @ np.array([[2.0], [-1.0], [0.5]], dtype="float32") + 1.0
"""),
    md("## Graph"),
    code("""
x_ph = tf.compat.v1.placeholder(tf.float32, shape=[None, 3], name="x")
y_ph = tf.compat.v1.placeholder(tf.float32, shape=[None, 1], name="y")
W = tf.compat.v1.get_variable("W", shape=[3, 1], initializer=tf.compat.v1.zeros_initializer())
b = tf.compat.v1.get_variable("b", shape=[1], initializer=tf.compat.v1.zeros_initializer())
pred = tf.matmul(x_ph, W) + b
loss = tf.reduce_mean(tf.square(pred - y_ph))
train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.1).minimize(loss)
init = tf.compat.v1.global_variables_initializer()
"""),
    md("## Training"),
    code("""
sess = tf.compat.v1.Session()
sess.run(init)
for epoch in range(3):
    for start in range(0, len(X), 32):
        feed = {x_ph: X[start : start + 32], y_ph: Y[start : start + 32]}
        _, batch_loss = sess.run([train_op, loss], feed_dict=feed)
    print(f"epoch {epoch}: loss {batch_loss:.4f}")
"""),
    code("""
w_value, b_value = sess.run([W, b])
print("W =", w_value.ravel().round(2), "b =", b_value.round(2))
sess.close()
"""),
]

TF1_MONITORED_SESSION = [
    md("""
# TF1 training with `MonitoredTrainingSession`

A global step, a `StopAtStepHook` and a loop that runs until the session says stop.
"""),
    code("""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
"""),
    code("""
rng = np.random.default_rng(10)
features = rng.normal(size=(256, 4)).astype("float32")
targets = (features.sum(axis=1, keepdims=True) > 0).astype("float32")
"""),
    code("""
global_step = tf.compat.v1.train.get_or_create_global_step()
x = tf.compat.v1.placeholder(tf.float32, [None, 4])
t = tf.compat.v1.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([4, 1]))
bias = tf.Variable(tf.zeros([1]))
logits = tf.matmul(x, w) + bias
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=t, logits=logits))
optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.05)
train_op = optimizer.minimize(loss, global_step=global_step)
"""),
    md("## Training"),
    code("""
hooks = [tf.compat.v1.train.StopAtStepHook(last_step=40)]
losses = []
with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks) as mon_sess:
    while not mon_sess.should_stop():
        idx = rng.integers(0, len(features), size=32)
        _, step_loss = mon_sess.run([train_op, loss], feed_dict={x: features[idx], t: targets[idx]})
        losses.append(step_loss)
"""),
    code("""
print(f"steps run: {len(losses)}, first loss {losses[0]:.3f}, last loss {losses[-1]:.3f}")
"""),
]

# --------------------------------------------------------------------------------------------
# Negative cases (no TensorFlow training)
# --------------------------------------------------------------------------------------------

NOT_TRAINING_NUMPY = [
    md("""
# Least squares two ways, numpy only

A scikit-learn-like estimator with `fit`/`predict`, then the same fit by gradient descent.
"""),
    code("""
import numpy as np
"""),
    code("""
rng = np.random.default_rng(11)
X = rng.normal(size=(256, 3))
y = X @ np.array([0.5, -1.0, 2.0]) + 0.7 + 0.1 * rng.normal(size=256)
"""),
    code('''
class LeastSquares:
    """Ordinary least squares with an intercept, scikit-learn style."""

    def fit(self, X, y):
        design = np.hstack([X, np.ones((len(X), 1))])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        self.coef_, self.intercept_ = coef[:-1], coef[-1]
        return self

    def predict(self, X):
        return X @ self.coef_ + self.intercept_
'''),
    md("## Closed form"),
    code("""
model = LeastSquares()
model.fit(X, y)
print("coef", model.coef_.round(3), "intercept", round(model.intercept_, 3))
"""),
    md("## Gradient descent"),
    code("""
w = np.zeros(3)
b = 0.0
learning_rate = 0.1
for epoch in range(200):
    residual = X @ w + b - y
    w -= learning_rate * (X.T @ residual) / len(y)
    b -= learning_rate * residual.mean()
    if epoch % 50 == 0:
        print(f"epoch {epoch}: mse {np.mean(residual**2):.4f}")
print("gd coef", w.round(3), "intercept", round(b, 3))
"""),
    code("""
mse = np.mean((model.predict(X) - y) ** 2)
print(f"closed-form mse {mse:.4f}")
"""),
]

KERAS_INFERENCE_ONLY = [
    md("""
# Inspecting an untrained network

Forward passes, `predict`, and input gradients (saliency) with a `GradientTape`:
no optimizer, no weight updates, no training.
"""),
    code("""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(0)
"""),
    code("""
rng = np.random.default_rng(12)
batch = rng.normal(size=(64, 5)).astype("float32")
"""),
    code("""
model = keras.Sequential(
    [keras.Input(shape=(5,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
)
scores = model.predict(batch, batch_size=32, verbose=0)
print("score range:", scores.min().round(3), scores.max().round(3))
"""),
    md("## Saliency"),
    code("""
saliency = []
for start in range(0, len(batch), 32):
    xb = tf.convert_to_tensor(batch[start : start + 32])
    with tf.GradientTape() as tape:
        tape.watch(xb)
        out = model(xb)
    saliency.append(tape.gradient(out, xb).numpy())
saliency = np.concatenate(saliency)
"""),
    code("""
print("mean |d score / d input| per feature:", np.abs(saliency).mean(axis=0).round(3))
"""),
]

# --------------------------------------------------------------------------------------------
# Python scripts
# --------------------------------------------------------------------------------------------

SCRIPT_PERCENT_KERAS_FIT = [
    md("""
# House prices (synthetic), Keras regression

A percent-format script: every `# %%` marker starts a cell.
"""),
    code("""
import keras
import numpy as np

keras.utils.set_random_seed(0)
"""),
    code("""
rng = np.random.default_rng(13)
size = rng.uniform(50, 200, size=(256, 1))
rooms = rng.integers(1, 6, size=(256, 1))
price = 1.5 * size + 10 * rooms + rng.normal(scale=5.0, size=(256, 1))
features = np.hstack([size / 100.0, rooms / 5.0]).astype("float32")
target = (price / 100.0).astype("float32")
"""),
    md("## Model"),
    code("""
model = keras.Sequential(
    [
        keras.Input(shape=(2,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(1),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", metrics=["mae"])
"""),
    md("## Training"),
    code("""
history = model.fit(features, target, validation_split=0.25, epochs=3, batch_size=32, verbose=2)
"""),
    code("""
print("val mae:", round(history.history["val_mae"][-1], 3))
print("prediction for 120 m2, 3 rooms:", model.predict(np.array([[1.2, 0.6]]), verbose=0)[0, 0])
"""),
]

SCRIPT_LIGHT_CUSTOM_LOOP = [
    code('''
"""Logistic regression with a custom TensorFlow training loop."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
'''),
    code("""
tf.random.set_seed(0)
rng = np.random.default_rng(14)
x_train = rng.normal(size=(256, 4)).astype("float32")
y_train = (x_train @ np.array([1.0, -1.0, 0.5, 0.0]) > 0).astype("float32").reshape(-1, 1)
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(32)
"""),
    code("""
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(learning_rate=0.5)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
"""),
    code("""
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""),
    code("""
for epoch in range(3):
    for x_batch, y_batch in train_ds:
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
"""),
    code("""
probabilities = tf.sigmoid(model(x_train)).numpy()
print("train accuracy:", float(np.mean((probabilities > 0.5) == y_train)))
"""),
]

NOTEBOOKS: dict[str, list[Cell]] = {
    "keras_sequential_earlystop.ipynb": KERAS_SEQUENTIAL_EARLYSTOP,
    "keras_functional_valsplit.ipynb": KERAS_FUNCTIONAL_VALSPLIT,
    "keras_subclass_fit.ipynb": KERAS_SUBCLASS_FIT,
    "keras_subclass_base_factory.ipynb": KERAS_SUBCLASS_BASE_FACTORY,
    "keras_fit_tfdata.ipynb": KERAS_FIT_TFDATA,
    "custom_loop_tf_function.ipynb": CUSTOM_LOOP_TF_FUNCTION,
    "custom_loop_plain_step.ipynb": CUSTOM_LOOP_PLAIN_STEP,
    "custom_loop_inline.ipynb": CUSTOM_LOOP_INLINE,
    "custom_loop_subclass_map.ipynb": CUSTOM_LOOP_SUBCLASS_MAP,
    "custom_loop_gan.ipynb": CUSTOM_LOOP_GAN,
    "tf1_session_graph.ipynb": TF1_SESSION_GRAPH,
    "tf1_monitored_session.ipynb": TF1_MONITORED_SESSION,
    "not_training_numpy.ipynb": NOT_TRAINING_NUMPY,
    "keras_inference_only.ipynb": KERAS_INFERENCE_ONLY,
}

PERCENT_SCRIPTS: dict[str, list[Cell]] = {
    "script_percent_keras_fit.py": SCRIPT_PERCENT_KERAS_FIT,
}

LIGHT_SCRIPTS: dict[str, list[Cell]] = {
    "script_light_custom_loop.py": SCRIPT_LIGHT_CUSTOM_LOOP,
}


def notebook(cells: list[Cell]) -> nbformat.NotebookNode:
    nb = new_notebook()
    for number, (kind, source) in enumerate(cells):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell.id = f"cell-{number}"
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def _comment(text: str) -> str:
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines())


def percent_script(cells: list[Cell]) -> str:
    parts = []
    for kind, source in cells:
        if kind == "md":
            parts.append("# %% [markdown]\n" + _comment(source))
        else:
            parts.append("# %%\n" + source)
    return "\n\n".join(parts) + "\n"


def light_script(cells: list[Cell]) -> str:
    """Cells separated by blank lines only (two around definitions, as PEP 8 asks)."""
    assert all(kind == "code" for kind, _ in cells), "an unmarked script has no markdown"
    text = cells[0][1]
    for (_, previous), (_, source) in itertools.pairwise(cells):
        definition = any(s.startswith(("def ", "class ", "@")) for s in (previous, source))
        text += ("\n\n\n" if definition else "\n\n") + source
    return text + "\n"


def write_all() -> list[Path]:
    written = []
    for name, cells in NOTEBOOKS.items():
        nbformat.write(notebook(cells), HERE / name)
        written.append(HERE / name)
    for name, cells in PERCENT_SCRIPTS.items():
        (HERE / name).write_text(percent_script(cells))
        written.append(HERE / name)
    for name, cells in LIGHT_SCRIPTS.items():
        (HERE / name).write_text(light_script(cells))
        written.append(HERE / name)
    return written


def check() -> None:
    """cases.py names every file, and each training cell is the one that trains (or the decoy)."""
    import jupytext

    sys.path.insert(0, str(HERE))
    from cases import CASES

    names = {case.file for case in CASES}
    generated = set(NOTEBOOKS) | set(PERCENT_SCRIPTS) | set(LIGHT_SCRIPTS)
    assert names == generated, names ^ generated
    for case in CASES:
        path = HERE / case.file
        nb = nbformat.read(path, as_version=4) if path.suffix == ".ipynb" else jupytext.read(path)
        if path.suffix == ".py":
            expected = [source for _, source in {**PERCENT_SCRIPTS, **LIGHT_SCRIPTS}[case.file]]
            got = [cell.source for cell in nb.cells]
            assert got == expected, f"{case.file}: jupytext reads other cells than were written"
        source = nb.cells[case.training_cell].source
        assert nb.cells[case.training_cell].cell_type == "code", case.file
        if case.kind == "keras_fit":
            assert all(f"{model}.fit(" in source for model in case.models), case.file
        elif case.kind == "custom_loop":
            assert any(line.startswith("for ") for line in source.splitlines()), case.file
            if case.step_function:
                assert f"{case.step_function}(" in source, case.file
            else:
                assert "GradientTape" in source and "apply_gradients" in source, case.file
        elif case.kind == "tf1_session":
            assert "Session(" in source and ".run(" in source, case.file
        else:
            assert case.kind is None and not case.models, case.file
        print(f"ok  {case.file:36} {case.kind!s:12} cell {case.training_cell}")


def run_all() -> None:
    """Run every case top to bottom (notebooks through nbclient) and print its wall time."""
    from nbclient import NotebookClient

    scripts = [HERE / name for name in {**PERCENT_SCRIPTS, **LIGHT_SCRIPTS}]
    failed = []
    for path in [HERE / name for name in NOTEBOOKS] + scripts:
        start = time.perf_counter()
        try:
            if path.suffix == ".ipynb":
                nb = nbformat.read(path, as_version=4)
                client = NotebookClient(
                    nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": HERE}}
                )
                client.execute()
            else:
                command = [sys.executable, str(path)]
                subprocess.run(command, check=True, cwd=HERE, capture_output=True, text=True)
        except Exception as error:  # report every case, then fail
            failed.append(path.name)
            print(f"FAILED {path.name}: {getattr(error, 'stderr', None) or error}")
        print(f"ran {path.name:36} {time.perf_counter() - start:6.1f} s")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check cases.py against the files")
    parser.add_argument("--run", action="store_true", help="run every case and time it")
    args = parser.parse_args()
    for path in write_all():
        print("wrote", path.relative_to(HERE.parent.parent))
    if args.check:
        check()
    if args.run:
        run_all()


if __name__ == "__main__":
    main()
