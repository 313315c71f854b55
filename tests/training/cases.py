"""What each program of the training corpus is: the expectations of a data-parallel detector.

The files are written by make_training_corpus.py; `--check` there verifies this manifest
against them (cell indices are checked with jupytext for the scripts).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One program of tests/training.

    file: the file name inside tests/training/ (".ipynb" or ".py").
    kind: "keras_fit" (Keras compile + fit), "custom_loop" (tf.GradientTape and
        optimizer.apply_gradients inside a loop), "tf1_session" (TF1 Session or
        MonitoredSession code, to be refused) or None (no TensorFlow training at all).
    models: the names of the variables holding the Keras model(s) that are trained; empty for
        "tf1_session" and None.
    step_function: for a custom loop that calls a user function holding the tape and
        apply_gradients, that function's name; None when they are inline in the loop body, and
        for the other kinds.
    training_cell: 0-based index among all cells (markdown included) of the cell that runs the
        training (the fit call or the loop); for a script, among the cells jupytext.read gives.
        For kind None, the cell holding the training look-alike that must not be detected.
    note: what the case exercises.
    """

    file: str
    kind: str | None
    models: tuple[str, ...]
    step_function: str | None
    training_cell: int
    note: str


CASES: list[Case] = [
    Case(
        "keras_sequential_earlystop.ipynb", "keras_fit", ("model",), None, 7,
        "Sequential; compile in the model cell, fit with validation_data and EarlyStopping",
    ),
    Case(
        "keras_functional_valsplit.ipynb", "keras_fit", ("classifier",), None, 5,
        "functional keras.Model(inputs, outputs) from tensorflow.keras; compile+fit in one cell,"
        " validation_split",
    ),
    Case(
        "keras_subclass_fit.ipynb", "keras_fit", ("net",), None, 7,
        "keras.Model subclass with call; a custom keras.callbacks.Callback subclass in fit",
    ),
    Case(
        "keras_subclass_base_factory.ipynb", "keras_fit", ("model",), None, 9,
        "Net(Base(keras.Model)) built by a user factory build_model() defined in another cell",
    ),
    Case(
        "keras_fit_tfdata.ipynb", "keras_fit", ("model",), None, 7,
        "tf.keras Sequential CNN fit on a tf.data pipeline (shuffle/batch/prefetch) built in"
        " an earlier cell, with a validation dataset",
    ),
    Case(
        "custom_loop_tf_function.ipynb", "custom_loop", ("model",), "train_step", 6,
        "@tf.function train_step(x, y) with tape+apply_gradients, called in"
        " `for epoch: for x, y in train_ds`",
    ),
    Case(
        "custom_loop_plain_step.ipynb", "custom_loop", ("linear",), "sgd_step", 6,
        "plain (eager, not tf.function) step function; batches sliced by hand from numpy arrays",
    ),
    Case(
        "custom_loop_inline.ipynb", "custom_loop", ("regressor",), None, 5,
        "GradientTape and apply_gradients written inline in the loop body over a tf.data dataset",
    ),
    Case(
        "custom_loop_subclass_map.ipynb", "custom_loop", ("convnet",), "train_one_batch", 8,
        "keras.Model subclass trained by a tf.function step; tf.data pipeline with .map()",
    ),
    Case(
        "custom_loop_gan.ipynb", "custom_loop", ("generator", "discriminator"), "train_step", 7,
        "two models and two optimizers updated in one tf.function step with two tapes (GAN)",
    ),
    Case(
        "tf1_session_graph.ipynb", "tf1_session", (), None, 6,
        "TF1 graph mode: disable_eager_execution, placeholders, sess.run(train_op) in a loop",
    ),
    Case(
        "tf1_monitored_session.ipynb", "tf1_session", (), None, 5,
        "tf.compat.v1.train.MonitoredTrainingSession with a StopAtStepHook and a global step",
    ),
    Case(
        "not_training_numpy.ipynb", None, (), None, 5,
        "negative: a user class's sklearn-like .fit (cell 5) and a numpy gradient-descent"
        " loop (cell 7); no TensorFlow",
    ),
    Case(
        "keras_inference_only.ipynb", None, (), None, 5,
        "negative: a Keras model only predicts; a GradientTape loop computes input gradients"
        " (saliency) but nothing applies them",
    ),
    Case(
        "script_percent_keras_fit.py", "keras_fit", ("model",), None, 6,
        "percent script (# %% markers, markdown cells) doing Sequential compile + fit",
    ),
    Case(
        "script_light_custom_loop.py", "custom_loop", ("model",), "train_step", 4,
        "unmarked script (cells are blank-line separated groups) with a tf.function train_step",
    ),
]
