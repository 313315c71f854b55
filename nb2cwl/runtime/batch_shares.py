"""A batch cut into the replicas' shares along its first axis, and the replicas' values put
back together (gathered in order, or added with weights).

Imports nothing from nb2cwl; the functions take the `tensorflow` module as an argument.
"""

from __future__ import annotations

from typing import Any


class Split:
    """An argument of `run` split along its first axis across the replicas."""

    def __init__(self, value: Any) -> None:
        self.value = value


def split_arguments(tf: Any, arguments: Any, replicas: int) -> tuple[list[Any], list[int]]:
    """Per replica, `arguments` with each `Split` value's arrays cut into contiguous shares
    along their first axis (sizes differ by at most one); the shares' sizes."""
    flat = tf.nest.flatten(arguments, expand_composites=False)
    sized = []
    for item in flat:
        if isinstance(item, Split):
            for leaf in tf.nest.flatten(item.value):
                shape = getattr(leaf, "shape", None)
                if shape is not None and len(shape) > 0:
                    sized.append(int(shape[0]))
    if not sized:
        raise ValueError("nb2cwl: the batch handed to the replicas has no first axis to split")
    if len(set(sized)) > 1:
        raise ValueError(f"nb2cwl: the batch's arrays have different first dimensions "
                         f"({sorted(set(sized))}); nb2cwl splits a batch along that axis")
    count = sized[0]
    sizes = [count // replicas + (1 if r < count % replicas else 0) for r in range(replicas)]
    bounds = [sum(sizes[:r]) for r in range(replicas + 1)]

    def cut(item: Any, r: int) -> Any:
        if not isinstance(item, Split):
            return item

        def leaf(value: Any) -> Any:
            shape = getattr(value, "shape", None)
            if shape is None or len(shape) == 0:
                return value
            return value[bounds[r]:bounds[r + 1]]

        return tf.nest.map_structure(leaf, item.value)

    parts = [tf.nest.pack_sequence_as(arguments, [cut(item, r) for item in flat])
             for r in range(replicas)]
    return parts, sizes


def all_gather(tf: Any, context: Any, tensor: Any) -> Any:
    """The replicas' tensors concatenated in order (all-gather takes few dtypes: others go
    through int32 or float32 and back)."""
    dtype = tensor.dtype
    if dtype in (tf.float32, tf.float16, tf.float64, tf.int32, tf.int64):
        return context.all_gather(tensor, axis=0)
    carrier = tf.float32 if dtype.is_floating else tf.int32
    return tf.cast(context.all_gather(tf.cast(tensor, carrier), axis=0), dtype)


def scale(tf: Any, value: Any, weight: float) -> Any:
    if weight == 1.0:
        return value
    if isinstance(value, tf.IndexedSlices):
        return tf.IndexedSlices(value.values * tf.cast(weight, value.values.dtype),
                                value.indices, value.dense_shape)
    return tf.math.multiply_no_nan(value, tf.cast(weight, value.dtype))

