"""TensorFlow, Keras and PyTorch.

Their objects cannot cross a step boundary exactly: a Keras model saved and loaded loses its
Python attributes and traced functions, a dataset cannot be saved at all, and the frameworks'
own random state (the global seed and the counter of op seeds) lives in the process. So the
cells that make and use them stay in one step. Keras draws the seeds of new layers from
Python's `random`; `keras.utils.set_random_seed` seeds `random` and NumPy too.
"""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

TF_CONFIG = StateKind("TensorFlow's configuration (devices, precision, eager mode)",
                      "tensorflow")

TENSORFLOW = Library(
    family="tensorflow",
    modules=("tensorflow", "keras", "tf_keras", "tensorflow_datasets", "tensorboard"),
    seeds={
        "tensorflow.random.set_seed": "TensorFlow's global seed",
        "tensorflow.compat.v1.set_random_seed": "TensorFlow's global seed",
        "tensorflow.set_random_seed": "TensorFlow's global seed",
        "keras.utils.set_random_seed": "Keras' and TensorFlow's random seeds",
        "tensorflow.keras.utils.set_random_seed": "Keras' and TensorFlow's random seeds",
        "tf_keras.utils.set_random_seed": "Keras' and TensorFlow's random seeds",
        "tensorflow.config.experimental.enable_op_determinism": "TensorFlow's determinism",
    },
    settings={f"tensorflow.{name}": TF_CONFIG for name in (
        "config.set_visible_devices", "config.experimental.set_memory_growth",
        "config.set_logical_device_configuration", "config.run_functions_eagerly",
        "config.threading.set_inter_op_parallelism_threads",
        "config.threading.set_intra_op_parallelism_threads", "get_logger",
        "keras.mixed_precision.set_global_policy", "keras.backend.set_floatx",
        "autograph.set_verbosity", "debugging.set_log_device_placement")}
    | {f"keras.{name}": TF_CONFIG for name in (
        "mixed_precision.set_global_policy", "backend.set_floatx", "config.set_floatx",
        "config.set_dtype_policy", "config.set_backend")},
    draws=frozenset({"rng:random", "rng:numpy"}),
    uncarried_values="TensorFlow and Keras objects (models, layers, tensors, datasets) and "
                     "TensorFlow's random state cannot be saved and loaded exactly",
    file_functions={
        "keras.models.load_model": FileCall("r", 0, "filepath"),
        "tensorflow.keras.models.load_model": FileCall("r", 0, "filepath"),
        "keras.saving.load_model": FileCall("r", 0, "filepath"),
    },
    heavy=True,
)

TORCH = Library(
    family="torch",
    modules=("torch", "torchvision", "torchaudio", "torchtext", "lightning",
             "pytorch_lightning"),
    seeds={"torch.manual_seed": "PyTorch's random seed",
           "torch.cuda.manual_seed": "PyTorch's CUDA random seed",
           "torch.cuda.manual_seed_all": "PyTorch's CUDA random seed",
           "torch.random.manual_seed": "PyTorch's random seed",
           "torch.use_deterministic_algorithms": "PyTorch's determinism",
           "lightning.seed_everything": "PyTorch's random seeds",
           "pytorch_lightning.seed_everything": "PyTorch's random seeds"},
    settings={f"torch.{name}": StateKind("PyTorch's configuration", "torch") for name in (
        "set_default_dtype", "set_default_device", "set_num_threads",
        "set_num_interop_threads", "set_printoptions", "set_grad_enabled",
        "set_float32_matmul_precision", "backends.cudnn.deterministic",
        "backends.cudnn.benchmark")},
    draws=frozenset({"rng:random", "rng:numpy"}),
    file_functions={"torch.save": FileCall("w", 1, "f"), "torch.load": FileCall("r", 0, "f")},
    # a tensor made from an array shares its memory; an optimizer keeps the model's
    # parameters, a DataLoader its dataset, a Sequential its layers
    sharing_functions=frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray"}),
    classes_keep_arguments=True,
    heavy=True,
)
