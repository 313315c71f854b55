"""IPython's magics: what each does to the program, for the analysis.

A step runs magics with IPython's own shell, as the kernel does (the step runtime's
kernel_shell.py); the analysis only needs to know their effects. A magic it does not know
(one an extension or the notebook registered) may read or change any variable: the notebook
then runs as one step.
"""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import TOGETHER, StateKind

CODE = "code"  # runs its argument (line) or body (cell) as Python in the user's namespace
SHELL = "shell"  # runs a program: may read or write any file
SETTING = "setting"  # changes the shell's or a library's settings: replayed in later steps
DISPLAY = "display"  # only shows something (its body is not code)
READS_ALL = "reads-all"  # looks at every variable (%who)
NAMESPACE = "namespace"  # may read or bind any variable (%run, %store -r, %reset)
SKIPPED = "skipped"  # not run in a workflow step (opens a live view)
INSTALLS = "installs"  # installs packages into the environment it runs in (%pip install)
WRITEFILE = "writefile"  # writes its body to the file the line names

SHELL_SETTINGS = StateKind("IPython's settings (%config, %precision, extensions)", "")
MATPLOTLIB_BACKEND = StateKind("the matplotlib backend (%matplotlib)", "matplotlib")
WORKING_DIRECTORY = StateKind("the working directory (%cd)", "", TOGETHER, "all")
ENVIRONMENT = StateKind("environment variables (os.environ)", "", observers="all")

LINE_MAGICS: dict[str, str] = {
    **dict.fromkeys(("time", "timeit", "prun", "debug"), CODE),
    **dict.fromkeys(("ls", "ll", "lf", "lk", "ldir", "lx", "cat", "cp", "mv", "rm", "rmdir",
                     "mkdir", "less", "more", "man", "clear", "sx", "sc", "system",
                     "killbgscripts", "bookmark"), SHELL),
    **dict.fromkeys(("config", "precision", "xmode", "colors", "pdb", "autocall", "automagic",
                     "doctest_mode", "alias", "unalias", "load_ext", "reload_ext",
                     "unload_ext", "autoreload", "aimport", "matplotlib", "autoawait",
                     "alias_magic", "cd", "pushd", "popd", "env", "set_env"), SETTING),
    **dict.fromkeys(("pwd", "dhist", "dirs", "lsmagic", "magic", "quickref", "page",
                     "pinfo", "pinfo2", "pdef", "pdoc", "psource", "pfile", "psearch",
                     "pycat", "tb", "notebook", "history", "hist", "conda_info"), DISPLAY),
    **dict.fromkeys(("who", "whos", "who_ls"), READS_ALL),
    **dict.fromkeys(("run", "load", "loadpy", "reset", "reset_selective", "store", "macro",
                     "recall", "rerun", "pylab", "edit", "save", "logstart", "logon",
                     "logoff", "logstop", "xdel", "sql", "R", "Rpush", "Rpull"), NAMESPACE),
    **dict.fromkeys(("pip", "conda", "mamba", "micromamba", "uv"), INSTALLS),
    "tensorboard": SKIPPED,
}
CELL_MAGICS: dict[str, str] = {
    **dict.fromkeys(("time", "timeit", "prun", "capture", "debug"), CODE),
    **dict.fromkeys(("bash", "sh", "script", "perl", "ruby", "python", "python2", "python3",
                     "pypy", "system", "sx"), SHELL),
    **dict.fromkeys(("html", "HTML", "markdown", "latex", "svg", "javascript", "js"),
                    DISPLAY),
    **dict.fromkeys(("writefile", "file"), WRITEFILE),
    **dict.fromkeys(("sql", "R", "cython", "fortran"), NAMESPACE),
}
#: Magics that IPython runs without expanding `$name` and `{expr}` in their line.
NO_VAR_EXPAND = frozenset({"time", "timeit", "prun", "debug", "capture", "sx", "sc",
                           "system", "alias", "macro"})
#: What a setting magic changes, when it is not IPython's own settings.
SETTING_STATE = {"matplotlib": MATPLOTLIB_BACKEND, "cd": WORKING_DIRECTORY,
                 "pushd": WORKING_DIRECTORY, "popd": WORKING_DIRECTORY,
                 "env": ENVIRONMENT, "set_env": ENVIRONMENT}
#: Why a skipped magic does not run in a step.
SKIPPED_WHY = {
    "tensorboard": "%tensorboard opens a live TensorBoard view for a person; a workflow step "
                   "does not start one (run `tensorboard --logdir ...` on the logs instead)",
}
SKIPPED_DEFAULT = "%{name} does not run in a workflow step"
#: Programs that install packages, as a shell line runs them (`!pip install x`).
INSTALLERS = frozenset({"pip", "pip3", "conda", "mamba", "micromamba", "uv"})
#: What a package install does in a step: what it does in the kernel, where the step runs.
INSTALLS_WHY = ("{what} installs packages where the step runs, as it does in the kernel's "
                "environment: locally into the Python the steps run with (the environment "
                "nb2cwl runs in, or --python), on Docker, Slurm or Kubernetes into the image's "
                "or the node's; a step with it is never reused from an earlier run")
#: History a kernel keeps of inputs and results: reading it depends on everything before.
HISTORY_NAMES = frozenset({"In", "Out", "_ih", "_oh", "_dh", "_i", "_ii", "_iii"})
#: The last results a kernel keeps: `_`, `__`, `___` (a cell reading them takes them from the
#: cells that showed a result before it).
RESULT_NAMES = ("_", "__", "___")
#: Builtins that always return None: a cell ending with a call of one shows no result, so
#: it leaves `_` as it was.
NONE_RETURNING = ("print",)
