"""A corpus of heavy loops in the shapes data scientists write, for tests/test_loop_corpus.py.

Each loop is one cell after a shared set-up cell. INDEPENDENT loops have iterations that give
the same results in any process and in any order: nb2cwl must scatter them. ORDERED loops
have iterations whose order (or whose process) changes a result: nb2cwl must keep them
sequential, naming the hazard. The loops are small (a notebook runs in seconds) but call
what makes real loops heavy: model fits, simulations, file reads, per-item functions.
"""

from __future__ import annotations

SETUP = '''\
import itertools
import math
import random

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, mean_squared_error
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

X, y = make_classification(n_samples=240, n_features=6, random_state=0)
Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0)
Xr, yr = make_regression(n_samples=150, n_features=4, noise=0.5, random_state=0)
df = pd.DataFrame({"group": np.repeat(list("abcdef"), 40),
                   "value": np.random.default_rng(0).normal(size=240),
                   "x": np.arange(240) % 17})
pixels = np.random.default_rng(1).random((8, 12, 12))
images = [pixels[i] for i in range(8)]
paths = []
for i in range(4):
    path = f"part{i}.csv"
    pd.DataFrame({"a": np.arange(20) * i, "b": np.arange(20) % 3}).to_csv(path, index=False)
    paths.append(path)


def simulate(seed, n=2000):
    rng = np.random.default_rng(seed)
    return float(rng.normal(size=n).cumsum()[-1])


def featurize(img):
    return np.array([img.mean(), img.std(), img.max()])


def train(lr, batch):
    w = 0.0
    for _ in range(300):
        w = w - lr * (w - batch / 10)
    return round(w, 6)
'''

#: name -> a cell whose loop's iterations are independent (nb2cwl must scatter it).
INDEPENDENT: dict[str, str] = {
    "grid_nested_forest": """\
results = []
for n in [5, 10, 20]:
    for depth in [2, 4]:
        model = RandomForestClassifier(n_estimators=n, max_depth=depth, random_state=0)
        model.fit(Xtr, ytr)
        results.append((n, depth, model.score(Xte, yte)))
print(max(results, key=lambda r: r[2]))""",
    "grid_computed_sizes": """\
base = 5
sized = []
for n in [base, 2 * base, base ** 2 - 5]:
    for depth in [2, -(-7 // 2)]:
        model = RandomForestClassifier(n_estimators=n, max_depth=depth, random_state=0)
        model.fit(Xtr, ytr)
        sized.append((n, depth, model.score(Xte, yte)))
print(max(sized, key=lambda r: r[2]))""",
    "files_named_by_fstrings": """\
lengths = []
for name in [f"part{i}.csv" for i in range(4)]:
    lengths.append((name, len(pd.read_csv(name))))
lengths""",
    "grid_dict_of_scores": """\
scores = {}
for C in [0.01, 0.1, 1.0, 10.0]:
    scores[C] = LogisticRegression(C=C, max_iter=500).fit(Xtr, ytr).score(Xte, yte)
scores""",
    "random_search_seeded": """\
trials = []
for seed in range(6):
    params = np.random.default_rng(seed).uniform(0.01, 1.0, size=2)
    clf = LogisticRegression(C=float(params[0]), max_iter=300).fit(Xtr, ytr)
    trials.append((seed, round(float(params[0]), 4), clf.score(Xte, yte)))
print(trials)""",
    "kfold_prints_each_fold": """\
fold_scores = []
for k, (tr, te) in enumerate(KFold(5, shuffle=True, random_state=0).split(X)):
    m = LogisticRegression(max_iter=500).fit(X[tr], y[tr])
    fold_scores.append(m.score(X[te], y[te]))
    print(f"fold {k}: {fold_scores[-1]:.3f}")
print(np.mean(fold_scores))""",
    "stratified_folds": """\
fold_acc = []
for tr, te in StratifiedKFold(4).split(X, y):
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X[tr], y[tr])
    fold_acc.append(accuracy_score(y[te], tree.predict(X[te])))
fold_acc""",
    "bootstrap_seed_per_item": """\
boot = []
for b in range(6):
    rng = np.random.default_rng(b)
    idx = rng.integers(0, len(X), len(X))
    boot.append(LogisticRegression(max_iter=300).fit(X[idx], y[idx]).score(X, y))
print(np.round(boot, 4))""",
    "simulations_comprehension": """\
finals = [simulate(s) for s in range(8)]
print(np.round(finals, 3))""",
    "simulations_loop": """\
outcomes = []
for s in range(8):
    outcomes.append(simulate(s, n=3000))
print(round(sum(outcomes), 4))""",
    "image_features_comprehension": """\
feats = [featurize(img) for img in images]
np.round(np.stack(feats), 4)""",
    "image_features_loop": """\
stats = []
for img in images:
    stats.append(featurize(img))
print(np.round(np.mean(stats, axis=0), 4))""",
    "per_group_fit": """\
coefs = {}
for key, g in df.groupby("group"):
    coefs[key] = Ridge(alpha=1.0).fit(g[["x"]], g["value"]).coef_[0]
print({k: round(float(v), 5) for k, v in coefs.items()})""",
    "per_group_rows_frame": """\
rows = []
for key, g in df.groupby("group"):
    slope = np.polyfit(g["x"], g["value"], 1)[0]
    rows.append({"group": key, "n": len(g), "slope": round(float(slope), 5)})
summary = pd.DataFrame(rows)
summary""",
    "per_file_frames": """\
frames = []
for path in paths:
    frames.append(pd.read_csv(path))
combined = pd.concat(frames, ignore_index=True)
print(combined.shape, int(combined["a"].sum()))""",
    "per_file_sizes": """\
sizes = {}
for path in paths:
    sizes[path] = int(pd.read_csv(path)["a"].sum())
sizes""",
    "enumerate_histories": """\
histories = {}
for i, lr in enumerate([0.1, 0.05, 0.01]):
    histories[i] = train(lr, 32)
histories""",
    "zip_tuple_results": """\
pairs = []
for lr, bs in zip([0.1, 0.01, 0.001], [16, 32, 64]):
    pairs.append((lr, bs, train(lr, bs)))
pairs""",
    "product_grid": """\
grid = []
for lr, bs in itertools.product([0.1, 0.01], [16, 32]):
    grid.append((lr, bs, train(lr, bs)))
grid""",
    "nested_tuple_results": """\
table = []
for lr in [0.1, 0.01]:
    for bs in [16, 32]:
        table.append((lr, bs, train(lr, bs)))
table""",
    "frame_from_rows": """\
depth_rows = []
for depth in [2, 4, 6]:
    m = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(Xtr, ytr)
    depth_rows.append({"depth": depth, "acc": m.score(Xte, yte)})
pd.DataFrame(depth_rows)""",
    "progress_prints": """\
accs = []
for n in [10, 20, 30]:
    acc = RandomForestClassifier(n_estimators=n, random_state=1).fit(Xtr, ytr).score(Xte, yte)
    print(f"n={n}: {acc:.3f}")
    accs.append(acc)""",
    "sum_reduction": """\
total = 0
for s in range(6):
    total += simulate(s)
print(round(total, 4))""",
    "sum_of_generator": """\
grand = sum(simulate(s) for s in range(6))
print(round(grand, 4))""",
    "dict_comprehension_models": """\
by_depth = {d: DecisionTreeClassifier(max_depth=d, random_state=0).fit(Xtr, ytr).score(Xte, yte)
            for d in [1, 2, 3, 4]}
by_depth""",
    "knn_sweep": """\
knn_acc = {}
for k in [1, 3, 5, 7]:
    knn = KNeighborsClassifier(k).fit(Xtr, ytr)
    knn_acc[k] = knn.score(Xte, yte)
knn_acc""",
    "ridge_alphas": """\
errors = []
for a in [0.1, 1.0, 10.0]:
    errors.append(mean_squared_error(yr, Ridge(alpha=a).fit(Xr, yr).predict(Xr)))
print(np.round(errors, 5))""",
    "pipelines": """\
pipe_scores = []
for C in [0.1, 1.0, 10.0]:
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=500))
    pipe.fit(Xtr, ytr)
    pipe_scores.append(pipe.score(Xte, yte))
pipe_scores""",
    "boosting_rates": """\
boosted = []
for lr in [0.05, 0.1, 0.2]:
    gb = GradientBoostingClassifier(learning_rate=lr, n_estimators=15, random_state=0)
    boosted.append(gb.fit(Xtr, ytr).score(Xte, yte))
boosted""",
    "monte_carlo_pi": """\
estimates = []
for seed in range(6):
    rng = np.random.default_rng(seed)
    pts = rng.random((20000, 2))
    estimates.append(4 * float((np.sum(pts ** 2, axis=1) <= 1).mean()))
print(np.round(estimates, 4))""",
    "column_descriptions": """\
described = {}
for col in ["value", "x"]:
    described[col] = df[col].apply(abs if col == "value" else math.sqrt).describe()
pd.DataFrame(described).round(4)""",
    "python_random_per_item": """\
draws = []
for seed in range(5):
    r = random.Random(seed)
    draws.append(round(sum(r.random() for _ in range(5000)), 6))
draws""",
    "forest_comprehension": """\
forest_acc = [RandomForestClassifier(n_estimators=n, random_state=0).fit(Xtr, ytr).score(Xte, yte)
              for n in [5, 10, 20]]
forest_acc""",
    "nested_comprehension": """\
train_table = [[train(lr, bs) for bs in [16, 32]] for lr in [0.1, 0.01]]
train_table""",
    "norms_of_features": """\
norms = []
for img in images:
    norms.append(float(np.linalg.norm(featurize(img))))
print(np.round(norms, 4))""",
    "string_items": """\
group_sums = {}
for name in ["a", "b", "c"]:
    sub = df[df["group"] == name]
    group_sums[name] = int(sub["x"].sum()) + round(simulate(len(name)), 3)
group_sums""",
    "continue_skips": """\
kept = []
for s in range(8):
    if s % 3 == 0:
        continue
    kept.append(simulate(s))
print(len(kept), round(kept[-1], 4))""",
    "conditional_append": """\
good = []
for n in [3, 6, 12]:
    m = RandomForestClassifier(n_estimators=n, random_state=0).fit(Xtr, ytr)
    score = m.score(Xte, yte)
    if score > 0.5:
        good.append((n, score))
good""",
    "dict_items_configs": """\
configs = {"small": 5, "large": 20}
config_scores = {}
for name, n in configs.items():
    config_scores[name] = RandomForestClassifier(n_estimators=n, random_state=0).fit(
        Xtr, ytr).score(Xte, yte)
config_scores""",
    "cross_val_seeded": """\
cvs = []
for d in [2, 4]:
    tree = DecisionTreeClassifier(max_depth=d, random_state=0)
    cvs.append(cross_val_score(tree, X, y, cv=3).mean())
print(np.round(cvs, 4))""",
    "enumerate_seeds": """\
sims = {}
for i, s in enumerate([11, 22, 33]):
    sims[i] = simulate(s)
sims""",
    "seed_through_function": """\
def fit_seeded(seed):
    return RandomForestClassifier(n_estimators=5, random_state=seed).fit(Xtr, ytr).score(Xte, yte)


seeded_scores = [fit_seeded(s) for s in range(4)]
seeded_scores""",
    "split_per_seed": """\
split_scores = []
for seed in range(4):
    a_tr, a_te, b_tr, b_te = train_test_split(X, y, random_state=seed)
    split_scores.append(LogisticRegression(max_iter=300).fit(a_tr, b_tr).score(a_te, b_te))
split_scores""",
    # arrays that scikit-learn's functions return are plain arrays: reading them draws nothing
    "sklearn_arrays_read": """\
row_totals = []
for b in range(6):
    row_totals.append(round(float(Xtr[b].sum()) + simulate(b), 4))
row_totals""",
    # a copy changed in the iteration: the collection's own frames stay as they are
    "copy_then_set_column": """\
parts = [df[df["group"] == g] for g in "abcd"]
doubled = []
for part in parts:
    d = part.copy()
    d["twice"] = d["value"] * 2
    doubled.append(round(float(d["twice"].sum()) + simulate(len(d)), 4))
doubled""",
    "assign_then_set_column": """\
by_group = {g: df[df["group"] == g] for g in "abc"}
assigned = {}
for g, frame in by_group.items():
    f2 = frame.assign(scaled=frame["value"] * 10)
    f2.loc[f2["x"] > 8, "scaled"] = 0.0
    assigned[g] = round(float(f2["scaled"].sum()) + simulate(len(g)), 4)
assigned""",
    # a frame's column labels are strings: holding one in the results is holding its value
    "column_labels": """\
column_stats = []
for col in df.columns:
    column_stats.append((col, str(df[col].iloc[0]), round(simulate(len(col)), 4)))
column_stats""",
    # a loop that only prints what each item gives: its lines keep the items' order
    "prints_only": """\
for s in range(4):
    print(f"seed {s}: {simulate(s):.4f}")""",
    # model classes that never draw (or are given a seed) compared in a dict
    "model_classes_dict": """\
model_classes = {"lr": LogisticRegression, "knn": KNeighborsClassifier}
class_scores = {}
for name, cls in model_classes.items():
    class_scores[name] = round(cls().fit(Xtr, ytr).score(Xte, yte) + simulate(len(name)), 4)
class_scores""",
    "seeded_model_classes": """\
seeded_classes = {"tree": DecisionTreeClassifier, "forest": RandomForestClassifier}
seeded_class_scores = {}
for name, cls in seeded_classes.items():
    model = cls(random_state=0).fit(Xtr, ytr)
    seeded_class_scores[name] = round(model.score(Xte, yte) + simulate(len(name)), 4)
seeded_class_scores""",
    "metric_handed_to_a_helper": """\
def evaluate(metric, model):
    model.fit(Xtr, ytr)
    return metric(yte, model.predict(Xte))


by_metric = []
for depth in [2, 3, 4]:
    by_metric.append(evaluate(accuracy_score, DecisionTreeClassifier(max_depth=depth,
                                                                      random_state=0)))
print(by_metric)""",
    "best_by_key_function": """\
best_params = []
for i in range(4):
    trial = {c: simulate(i * 10 + c) for c in [1, 2, 3]}
    best_params.append(max(trial, key=trial.get))
best_params""",
}

#: name -> (a cell whose loop's order or process changes a result, the hazard nb2cwl names).
ORDERED: dict[str, tuple[str, str]] = {
    "shared_generator": ("""\
rng = np.random.default_rng(0)
samples = []
for i in range(5):
    samples.append(float(rng.normal(size=500).mean()) + simulate(i))
samples""", "global_rng"),
    "numpy_global_seed": ("""\
np.random.seed(0)
noisy = []
for i in range(4):
    noisy.append(float(np.random.rand(100).mean()) + simulate(i))
noisy""", "global_rng"),
    "unseeded_forest": ("""\
unseeded = []
for n in [5, 10]:
    unseeded.append(RandomForestClassifier(n_estimators=n).fit(Xtr, ytr).score(Xte, yte))
len(unseeded)""", "global_rng"),
    "unseeded_model_classes": ("""\
np.random.seed(2)
mixed_classes = {"lr": LogisticRegression, "tree": DecisionTreeClassifier}
mixed_scores = {}
for name, cls in mixed_classes.items():
    mixed_scores[name] = cls().fit(Xtr, ytr).score(Xte, yte) + simulate(len(name))
len(mixed_scores)""", "global_rng"),
    "python_random_global": ("""\
random.seed(3)
picks = []
for i in range(4):
    picks.append(random.random() + simulate(i))
picks""", "global_rng"),
    "unseeded_split": ("""\
np.random.seed(1)
halves = []
for i in range(3):
    a_tr, a_te = train_test_split(X)
    halves.append(float(a_tr[0, 0]) + simulate(i))
halves""", "global_rng"),
    "weights_carried": ("""\
w = 0.0
trajectory = []
for lr in [0.5, 0.25, 0.125]:
    w = w + train(lr, 16)
    trajectory.append(w)
trajectory""", "loop_carried"),
    "running_best": ("""\
best = []
for s in range(5):
    best.append(max(best + [simulate(s)]))
best""", "accumulator_read"),
    "early_stop": ("""\
found = []
for s in range(10):
    v = simulate(s)
    if v > 20:
        break
    found.append(v)
len(found)""", "early_exit"),
    "fit_models_in_dict": ("""\
models = {"tree": DecisionTreeClassifier(max_depth=2, random_state=0),
          "knn": KNeighborsClassifier(3)}
fitted = {}
for name, model in models.items():
    model.fit(Xtr, ytr)
    fitted[name] = model.score(Xte, yte)
models["tree"].predict(Xte[:3])""", "shared_mutation"),
    "writes_files": ("""\
written = []
for i in range(3):
    pd.DataFrame({"v": [simulate(i)]}).to_csv(f"out{i}.csv", index=False)
    written.append(i)
written""", "file_writes"),
    "pops_shared_pool": ("""\
pool = list(range(10))
taken = []
for i in range(4):
    pool.pop()
    taken.append(len(pool) + simulate(i))
taken""", "shared_mutation"),
    "shared_iterator": ("""\
stream = iter(range(20))
pairs_taken = []
for i in range(3):
    pairs_taken.append((next(stream), next(stream), simulate(i)))
pairs_taken""", "shared_iterator"),
    "counter_rebound": ("""\
count = 0
counted = []
for s in range(4):
    count = count + 1
    counted.append(simulate(s) + count)
counted""", "loop_carried"),
    "collection_grows": ("""\
queue = [1]
for x in queue:
    if x < 40:
        queue.append(x * 2 + int(simulate(x) > 0))
queue""", "collection_grows"),
    "generator_through_function": ("""\
def fit_with(generator):
    return RandomForestClassifier(n_estimators=5, random_state=generator).fit(Xtr, ytr).score(
        Xte, yte)


shared = np.random.RandomState(0)
via = []
for i in range(3):
    via.append(fit_with(shared))
via""", "global_rng"),
    "cache_between_calls": ("""\
from functools import lru_cache

@lru_cache(maxsize=None)
def slow_square(n):
    return n * n + simulate(n)

squares = []
for n in [1, 2, 1, 2]:
    squares.append(slow_square(n))
slow_square.cache_info().hits""", "stateful_decorator"),
    "helper_calls_a_mutating_callable": ("""\
def log_into(record, entry):
    record.append(entry)


def run_logged(log_fn, record, name):
    log_fn(record, name)
    return simulate(len(record))


run_log = []
logged = []
for name in ["lr", "tree", "knn"]:
    logged.append(run_logged(log_into, run_log, name))
logged""", "shared_mutation"),
    "bound_method_mapped": ("""\
seen_ids = []
mapped = []
for i in range(3):
    mapped.append(len(list(map(seen_ids.append, [i, i + 1]))) + simulate(len(seen_ids)))
mapped""", "shared_mutation"),
}
