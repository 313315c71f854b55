"""scikit-learn, SciPy, statsmodels: they draw from NumPy's global generator when no
random_state is given; scikit-learn has a global configuration. Their classes keep the objects
they are given: a Pipeline its estimators (fitting it fits them), a search its estimator, a
statsmodels model its data, a KD-tree its points."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

SKLEARN_CONFIG = StateKind("scikit-learn's configuration (set_config)", "sklearn")

SKLEARN = Library(
    family="sklearn",
    modules=("sklearn",),
    settings={"sklearn.set_config": SKLEARN_CONFIG},
    draws=frozenset({"rng:numpy"}),
    # fitting (a forest's bootstrap, a shuffling solver), splitting with shuffle=True,
    # sampling from a fitted model, a DummyClassifier's predictions (and its score, which
    # predicts); transform and the methods of the arrays its functions return (load_iris,
    # train_test_split) do not
    drawing_methods=frozenset({"fit", "fit_transform", "fit_predict", "partial_fit", "split",
                               "sample", "fit_resample", "predict", "predict_proba",
                               "predict_log_proba", "score"}),
    keeping_functions=frozenset({"sklearn.pipeline.make_pipeline", "sklearn.pipeline.make_union",
                                 "sklearn.compose.make_column_transformer"}),
    classes_keep_arguments=True,
    heavy=True,
    preloadable=True,
)
SCIPY = Library(family="scipy", modules=("scipy",), draws=frozenset({"rng:numpy"}),
                classes_keep_arguments=True, heavy=True, preloadable=True)
STATSMODELS = Library(family="statsmodels", modules=("statsmodels",),
                      draws=frozenset({"rng:numpy"}), classes_keep_arguments=True, heavy=True)
JOBLIB = Library(family="joblib", modules=("joblib",), file_functions={
    "joblib.dump": FileCall("w", 1, "filename"), "joblib.load": FileCall("r", 0, "filename")})
