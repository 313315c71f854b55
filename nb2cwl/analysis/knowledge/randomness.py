"""Random numbers: which calls are given their own seed, which never draw, and which objects
are random generators.

A library with `draws` (scikit-learn, SciPy, Keras) takes its random numbers from NumPy's or
Python's global generator unless a call is given a seed of its own: an int `random_state=0`
makes a private generator, so the call draws nothing global and gives the same result in any
process and in any order. A generator object passed instead (`random_state=rng`) is used, and
advanced, by the call: every call that shares it depends on the ones before.
"""

from __future__ import annotations

#: Keywords through which a call is given its own seed or generator.
SEED_KEYWORDS = ("random_state", "seed", "rng", "random_seed")

#: Calls of libraries that draw (scikit-learn, SciPy) which take no random numbers at all,
#: given a seed or not: closed-form or deterministic fits, scalers and encoders, metrics,
#: splitters that do not shuffle by default. An entry covers the names under it.
NEVER_DRAW = frozenset({
    "sklearn.metrics", "sklearn.neighbors", "sklearn.naive_bayes",
    "sklearn.discriminant_analysis", "sklearn.isotonic", "sklearn.kernel_ridge",
    "sklearn.feature_extraction", "sklearn.base.clone",
    *(f"sklearn.preprocessing.{name}" for name in (
        "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "Normalizer",
        "Binarizer", "OneHotEncoder", "OrdinalEncoder", "LabelEncoder", "LabelBinarizer",
        "PolynomialFeatures", "FunctionTransformer", "PowerTransformer", "SplineTransformer",
        "scale", "minmax_scale", "normalize")),
    "sklearn.impute.SimpleImputer", "sklearn.impute.KNNImputer",
    *(f"sklearn.model_selection.{name}" for name in (
        "KFold", "StratifiedKFold", "GroupKFold", "TimeSeriesSplit", "LeaveOneOut",
        "LeavePOut", "LeaveOneGroupOut", "ParameterGrid")),
    *(f"sklearn.linear_model.{name}" for name in (
        "LinearRegression", "Ridge", "RidgeCV", "RidgeClassifier", "LogisticRegression",
        "Lasso", "ElasticNet", "LassoCV", "ElasticNetCV", "HuberRegressor", "BayesianRidge",
        "PoissonRegressor")),
    "sklearn.cluster.AgglomerativeClustering", "sklearn.cluster.DBSCAN", "sklearn.svm.SVR",
    *(f"scipy.stats.{name}" for name in (
        "pearsonr", "spearmanr", "kendalltau", "ttest_ind", "ttest_rel", "ttest_1samp",
        "linregress", "zscore", "describe", "norm.pdf", "norm.cdf", "norm.ppf", "sem",
        "mannwhitneyu", "wilcoxon", "chi2_contingency", "f_oneway", "shapiro")),
    *(f"scipy.optimize.{name}" for name in (
        "minimize", "minimize_scalar", "curve_fit", "least_squares", "root", "root_scalar",
        "brentq", "fsolve", "linprog", "nnls")),
    *(f"scipy.linalg.{name}" for name in (
        "inv", "solve", "eig", "eigh", "svd", "lstsq", "det", "norm", "cholesky", "qr", "lu",
        "expm")),
    "scipy.integrate", "scipy.signal", "scipy.interpolate", "scipy.spatial", "scipy.special",
    "scipy.fft", "scipy.ndimage",
})

#: Settings under which one of the NEVER_DRAW classes does draw after all, unless seeded:
#: `LogisticRegression(solver="saga")`, `KFold(shuffle=True)`, `Lasso(selection="random")`.
DRAWING_SETTINGS: dict[str, frozenset[object]] = {
    "solver": frozenset({"sag", "saga", "liblinear"}),
    "shuffle": frozenset({True}),
    "selection": frozenset({"random"}),
}

#: Calls whose own randomness is that of the estimators (and splitters) they are given: a
#: cross-validation with an int cv splits without shuffling. They draw only when one of
#: those does: the first argument ("first", with `estimator=` and `cv=`), or every one.
DRAWS_THROUGH_ARGUMENTS: dict[str, str] = {
    **dict.fromkeys((f"sklearn.model_selection.{name}" for name in (
        "cross_val_score", "cross_validate", "cross_val_predict", "GridSearchCV",
        "learning_curve", "validation_curve")), "first"),
    **dict.fromkeys(("sklearn.pipeline.Pipeline", "sklearn.pipeline.make_pipeline",
                     "sklearn.compose.ColumnTransformer",
                     "sklearn.compose.make_column_transformer"), "all"),
}
#: The keywords through which those calls are given estimators and splitters.
ESTIMATOR_KEYWORDS = frozenset({"estimator", "cv", "steps", "transformers"})

#: The types of random generator objects (`default_rng(0)`, `random.Random(1)`): every draw
#: advances them, so the calls that share one depend on each other's order.
GENERATOR_TYPES = frozenset({"numpy.random.Generator", "numpy.random.RandomState",
                             "random.Random"})


def never_draws(qualified: str) -> bool:
    """Whether a call of `qualified` takes no random numbers (given no drawing setting)."""
    parts = qualified.split(".")
    return any(".".join(parts[:end]) in NEVER_DRAW for end in range(len(parts), 0, -1))
