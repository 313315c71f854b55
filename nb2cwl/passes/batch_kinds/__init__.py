"""How each value of a training step depends on the batch, for running it on replicas.

On R replicas each replica runs the step's per-batch code on its share of the global batch.
That is the notebook's algorithm only when every value the code passes on is turned back into
the value the notebook computes on the whole batch. Each expression gets a kind:

- `E` per example: the batch is its leading dimension (`x`, `model(x)`, `tf.square(p - y)`);
  the replicas' values, gathered in order, are the global batch's;
- `C` the same on every replica: weights, constants, models, and gradients once all-reduced;
- `S` additive: the replicas' values sum to the global batch's (`tf.reduce_sum(e)`, a sum
  divided by a constant, `tf.nn.l2_loss(e)`);
- `M` a mean over the batch (`tf.reduce_mean(e)`, a Keras loss object): the global value is
  the replicas' values weighted by their shares of the batch;
- `B` the replica's batch size (`len(x)`, `tf.shape(x)[0]`);
- `U` anything else: nb2cwl cannot tell, and does not distribute code that passes it on.

The analysis reads code text with `ast` (cells, replayed definitions, the functions the step
calls) and records the edits that make the per-replica code compute the notebook's values:
gradients all-reduced by the loss's kind, a mean added to a sum as its share, returned values
combined by kind, and calls with effects (print, a metric's update, a list's append) made once,
with the global batch's values. When a value's kind is unknown where it matters, `Unsafe`
says which line and why.

The kinds and `Unsafe` are in `kinds`; the code the step runs in `unit` (one cell or
definition, with its edits) and `program` (imports, definitions and assignments across units);
the walk's names in `scope`. `replica_code.ReplicaCode` is the walk itself, made of
`statements`, `expressions`, `calls` and `library_calls` (what library functions do to the
batch).
"""
