"""nb2cwl: compile ordinary Jupyter notebooks into CWL v1.2 workflows that StreamFlow runs."""

from nb2cwl.api import compile_notebook, compile_to_directory
from nb2cwl.errors import Nb2CwlError
from nb2cwl.hints import gpu_task, parallel_task
from nb2cwl.options import CompileOptions

__version__ = "0.1.0"
__all__ = ["CompileOptions", "Nb2CwlError", "__version__", "compile_notebook",
           "compile_to_directory", "gpu_task", "parallel_task"]
