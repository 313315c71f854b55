# %% [markdown]
# # House prices (synthetic), Keras regression
#
# A percent-format script: every `# %%` marker starts a cell.

# %%
import keras
import numpy as np

keras.utils.set_random_seed(0)

# %%
rng = np.random.default_rng(13)
size = rng.uniform(50, 200, size=(256, 1))
rooms = rng.integers(1, 6, size=(256, 1))
price = 1.5 * size + 10 * rooms + rng.normal(scale=5.0, size=(256, 1))
features = np.hstack([size / 100.0, rooms / 5.0]).astype("float32")
target = (price / 100.0).astype("float32")

# %% [markdown]
# ## Model

# %%
model = keras.Sequential(
    [
        keras.Input(shape=(2,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(1),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", metrics=["mae"])

# %% [markdown]
# ## Training

# %%
history = model.fit(features, target, validation_split=0.25, epochs=3, batch_size=32, verbose=2)

# %%
print("val mae:", round(history.history["val_mae"][-1], 3))
print("prediction for 120 m2, 3 rooms:", model.predict(np.array([[1.2, 0.6]]), verbose=0)[0, 0])
