"""The nb2cwl command line's options: every command, every option and its help (nb2cwl.cli
parses with it, then runs the command)."""

from __future__ import annotations

import argparse

from nb2cwl import __version__

COMMANDS = ("compile", "run", "check", "explain", "graph", "export", "verify", "profile",
            "calibrate", "cache", "image")

DESCRIPTION = """\
Compile a Jupyter notebook into a CWL v1.2 workflow that StreamFlow runs.

  nb2cwl NOTEBOOK.ipynb [-o OUT/]        compile (same as: nb2cwl compile ...; OUT defaults
                                         to NOTEBOOK-wf beside the notebook)
  streamflow run OUT/streamflow.yml      execute it (every step local, unless bound elsewhere:
                                         --deployment, --target; see nb2cwl compile -h)
  nb2cwl run NOTEBOOK.ipynb              compile and run, with progress and a summary
  nb2cwl check NOTEBOOK.ipynb            run it in a kernel and as a workflow; compare every
                                         cell's outputs (exit status 1 if any differs)
  nb2cwl explain NOTEBOOK.ipynb [--json] steps, edges and why
  nb2cwl graph NOTEBOOK.ipynb -o dag.svg the step graph (.svg, .dot or .mmd)
  nb2cwl export NOTEBOOK.ipynb -o B.zip  a reproducible bundle (Workflow RO-Crate) to rerun
  nb2cwl verify DIR                      check an unzipped bundle's checksums and crate
  nb2cwl profile NOTEBOOK.ipynb          time each cell once (nbclient), for --profile
  nb2cwl calibrate [--deployment NAME]   measure what a step costs where steps run
  nb2cwl image NOTEBOOK.ipynb --build    a Docker step image pinning this environment

Loops and comprehensions whose iterations are independent run as a scatter over chunks,
gathered back in order (see --chunks, --no-scatter); `nb2cwl explain` says which and why not.
TensorFlow training cells (Keras fit, GradientTape loops) run under a tf.distribute strategy
chosen where the step runs: every GPU of the node (MirroredStrategy, NCCL), every node of a
Slurm allocation (MultiWorkerMirroredStrategy; --resources @train=nodes=2,gpus=4), or one device.
Cell tags: nb2cwl:skip (do not run the cell), nb2cwl:step=NAME (cells with the same NAME run
as one step). Jupyter-Workflow 'workflow' cell metadata (step in/out, target) is honoured.
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", help="the .ipynb notebook, or a Python script (.py, cells "
                        "marked with '# %%%%'; unmarked: one cell per group of top-level "
                        "statements separated by blank lines), to compile")
    parser.add_argument("--granularity", choices=("auto", "cell"), default="auto",
                        help="auto (the default): a step boundary only where it pays (heavy "
                             "independent work runs side by side, loops scatter) or is needed "
                             "(another deployment, a tag, state that cannot cross); every "
                             "other cell shares a step with its neighbours. cell: one step "
                             "per cell, for debugging")
    parser.add_argument("--profile", metavar="FILE",
                        help="a profile of a real run (nb2cwl profile NOTEBOOK) whose measured "
                             "seconds per cell replace the static estimates where boundaries "
                             "and scatters are chosen. Without it, the seconds the last "
                             "nb2cwl run into the output folder measured are used, for the "
                             "cells unchanged since; then JupyterLab's recorded timings; then "
                             "the estimates. A loop whose measured seconds show that a "
                             "scatter would not pay stays in one step (explain gives the "
                             "figures)")
    parser.add_argument("--no-scatter", action="store_true",
                        help="run every loop sequentially, even where its iterations are "
                             "independent")
    parser.add_argument("--chunks", type=_positive, default=0, metavar="N",
                        help="cut each scattered collection into N chunks (default: one per "
                             "available core, at most one per item)")
    parser.add_argument("--scale-learning-rate", action="store_true",
                        help="in training steps (Keras fit), multiply the optimizer's learning "
                             "rate by the number of replicas; off by default because it "
                             "changes results (the notebook's batch size is always the global "
                             "batch, split across the replicas)")
    parser.add_argument("--debug", action="store_true",
                        help="show full tracebacks and StreamFlow's log")


def _selection_options(parser: argparse.ArgumentParser) -> None:
    """Which cells, and whose content (compile, run, explain and graph)."""
    parser.add_argument("--cells", type=_cell_list, default=(), metavar="IDS",
                        help="run only these cells (comma-separated cell ids, or indices "
                             "counting every cell from 0) and the cells they need: those "
                             "whose values, files, definitions or settings they use; the "
                             "others do not run. The chosen cells run again; the cells they "
                             "need may be reused from an earlier run (nb2cwl run)")
    parser.add_argument("--content", metavar="FILE",
                        help="take the notebook's cells from FILE (a notebook) instead of "
                             "NOTEBOOK itself, which still names the notebook and the folder "
                             "its files are in: how unsaved edits run (the Jupyter "
                             "integration uses it); NOTEBOOK is never written")


def _cell_list(text: str) -> tuple[str, ...]:
    cells = tuple(item.strip() for item in text.split(",") if item.strip())
    if not cells:
        raise argparse.ArgumentTypeError("name at least one cell")
    return cells


def build_parser() -> argparse.ArgumentParser:
    """The nb2cwl command line's parser: every command and option, with its help."""
    parser = argparse.ArgumentParser(prog="nb2cwl", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"nb2cwl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    compile_ = commands.add_parser("compile", help="compile a notebook into a workflow "
                                   "directory (the default command)")
    _common(compile_)
    _selection_options(compile_)
    _output_options(compile_, required=False)
    run = commands.add_parser(
        "run", help="compile, then run the workflow with StreamFlow",
        description="Compile the notebook, then run the workflow with StreamFlow, with progress "
        "and a summary. Ctrl-C, SIGTERM or SIGHUP (to this process alone too, as timeout and "
        "kill send them) stop StreamFlow and every step process, Slurm job and container it "
        "started, then exit with status 128 + the signal's number (130, 143, 129).")
    _common(run)
    _selection_options(run)
    _output_options(run, required=False)
    run.add_argument("--quiet", action="store_true", help="print only the summary")
    _parameter_options(run)
    reuse = run.add_mutually_exclusive_group()
    reuse.add_argument("--no-cache", action="store_true",
                       help="run every step again and keep nothing; by default a step whose "
                            "code and inputs are unchanged since an earlier run reuses its "
                            "outputs (kept in OUTPUT/.nb2cwl-cache)")
    reuse.add_argument("--refresh", action="store_true",
                       help="run every step again, and keep the outputs for later runs")
    run.add_argument("--cache-limit", metavar="SIZE",
                     help="when the run ends, remove the least recently used entries of the "
                          "step cache until it fits in SIZE (500M, 2G, or bytes); default: "
                          "$NB2CWL_CACHE_LIMIT, else no limit (nb2cwl cache OUTPUT lists it)")
    run.add_argument("--keep-runs", metavar="N",
                     help="when the run ends, remove the oldest OUTPUT/runs/<n> folders beyond "
                          "the newest N (this run's included); default: $NB2CWL_KEEP_RUNS, else "
                          "every run is kept")
    run.add_argument("--keep-values", action="store_true",
                     help="each step also keeps the variables its cells define that no later "
                          "step reads (in OUTPUT/.nb2cwl-cache), so that they can be loaded "
                          "into a kernel afterwards (%%nb2cwl pull NAME, in Jupyter)")
    run.add_argument("--events", metavar="FILE",
                     help="append the run's progress to FILE as JSON lines: the steps queued, "
                          "running (where, which shard), done, cached, failed or skipped, "
                          "and each cell's outputs as they are produced (on deployments that "
                          "share this file system); the run's end comes last")
    explain = commands.add_parser("explain", help="show the steps, the values flowing "
                                  "between cells and the reasons")
    _common(explain)
    _selection_options(explain)
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    _last_run_option(explain)
    _deployment_options(explain)  # explain shows where each step runs
    graph = commands.add_parser(
        "graph", help="draw the step graph",
        description="Draw the step graph: an SVG laid out by Graphviz's dot (bundled with "
        "pygraphviz), or its DOT text, or a Mermaid flowchart. Steps are coloured by where "
        "they run, with a legend, when they run in more than one place.")
    _common(graph)
    _selection_options(graph)
    graph.add_argument("-o", "--output", required=True,
                       help="file to write: .svg, .dot or .mmd (Mermaid)")
    graph.add_argument("--format", choices=("svg", "dot", "mmd"),
                       help="output format (default: from the file extension)")
    _last_run_option(graph)
    _deployment_options(graph)
    _bundle_parsers(commands)
    _check_parser(commands)
    profile = commands.add_parser(
        "profile", help="run the notebook once top to bottom in a kernel and record each "
        "cell's seconds, peak memory and the size of the values later cells read, for "
        "compile/run --profile FILE")
    profile.add_argument("notebook", help="the notebook (or script) to profile")
    profile.add_argument("-o", "--output", metavar="FILE",
                         help="where to write the profile (default: NOTEBOOK.profile.json "
                              "beside the notebook)")
    profile.add_argument("--force", action="store_true",
                         help="replace FILE even if it is not a profile nb2cwl wrote")
    profile.add_argument("--timeout", type=_positive, default=3600, metavar="SECONDS",
                         help="the longest one cell may run (default 3600)")
    profile.add_argument("--debug", action="store_true", help="show full tracebacks")
    image = commands.add_parser(
        "image", help="write the build folder of the notebook's step image (a Dockerfile "
        "and the exact versions this environment has of what the notebook imports), and "
        "build it with --build, for --deployment docker --image TAG")
    image.add_argument("notebook", help="the notebook (or script) whose steps the image runs")
    image.add_argument("-o", "--output", metavar="DIR",
                       help="the build folder (default: NOTEBOOK-image beside the notebook)")
    image.add_argument("-t", "--tag", metavar="TAG",
                       help="the image's name (default: nb2cwl-step-NOTEBOOK:HASH of the pins)")
    image.add_argument("--base", metavar="IMAGE",
                       help="the image to build on (default: python:X.Y.Z-slim, this Python; "
                            "any image with python3 and pip; pins it already has are kept)")
    image.add_argument("--build", action="store_true",
                       help="run docker build too (DOCKER_HOST is honoured)")
    image.add_argument("--force", action="store_true",
                       help="write into DIR even if it holds other files")
    image.add_argument("--debug", action="store_true", help="show full tracebacks")
    calibrate = commands.add_parser(
        "calibrate", help="measure what one more step and a value crossing a step boundary "
        "cost on a deployment, and keep the figures where compiling for it finds them")
    calibrate.add_argument("--repeats", type=_positive, default=2, metavar="N",
                           help="runs of each measurement; the fastest counts (default 2)")
    calibrate.add_argument("--debug", action="store_true", help="show full tracebacks")
    _deployment_options(calibrate)
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _parameter_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "parameters", "The cell tagged 'parameters' (papermill) or 'pipeline-parameters' (Kale) "
        "declares the workflow's inputs: each NAME = LITERAL in it (int, float, str, bool, a "
        "list of one of these; a string naming a file or folder beside the notebook is a file "
        "input). Its values are the defaults (in OUTPUT/job.yml); the run's values are "
        "assigned right after that cell, as papermill does, without compiling again.")
    group.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                       metavar=("NAME", "VALUE"),
                       help="give parameter NAME this value (read as papermill reads -p: True, "
                            "False, None, a number, else text; a list parameter's value as "
                            "YAML, e.g. '[32, 64]'); repeat a NAME with --sweep to sweep it")
    group.add_argument("-f", "--parameters-file", action="append", default=[], metavar="FILE",
                       help="a YAML file of NAME: VALUE (as papermill -f); -p wins over it")
    group.add_argument("--sweep", action="store_true",
                       help="run the workflow once per combination of the values given for a "
                            "parameter several times, side by side (all at once on a cluster, "
                            "one per core here): one executed notebook each, and a summary "
                            "table; steps no swept parameter reaches run once and are reused")
    group.add_argument("--sweep-file", metavar="FILE",
                       help="a YAML file of NAME: [VALUE, ...] to sweep (implies --sweep)")
    group.add_argument("--sweep-method", choices=("nested_crossproduct", "dotproduct"),
                       default="nested_crossproduct",
                       help="nested_crossproduct (the default): every combination; dotproduct: "
                            "the first values together, then the second, ... (as CWL's scatter "
                            "methods)")


def _output_options(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("-o", "--output", required=required,
                        help="output directory for the workflow"
                             + ("" if required else " (default: NOTEBOOK-wf beside the notebook)"))
    parser.add_argument("--force", action="store_true",
                        help="write into an existing directory that holds other files "
                             "(files nb2cwl did not write are kept unless names collide), or "
                             "the workflow of another notebook (which it replaces)")
    parser.add_argument("--wait", action="store_true",
                        help="when another nb2cwl run, check or compile is writing into the "
                             "output directory (from here, another terminal or Jupyter), wait "
                             "for it to end instead of refusing; folders never wait for each "
                             "other")
    _step_options(parser)


def _step_options(parser: argparse.ArgumentParser) -> None:
    """How steps run: interpreter, retries, and deployments (compile, run and export)."""
    parser.add_argument("--retries", type=_positive, default=0, metavar="N",
                        help="retry a step whose process crashed (killed, out of memory, lost "
                             "node) up to N times; a cell that raises is not retried")
    parser.add_argument("--retry-delay", type=_positive, default=0, metavar="SECONDS",
                        help="wait this long before each retry")
    parser.add_argument("--python", default="python3",
                        help="Python interpreter the steps run with, found on PATH where the "
                             "step runs (default: python3)")
    _deployment_options(parser)


def _deployment_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "where steps run", "Profiles for local, docker, slurm and helm are in streamflow-configs/. "
        "A step runs on the first --target that matches it, else on its cell's Jupyter-Workflow "
        "workflow.target, else on --deployment. STEP is a step name or glob (see nb2cwl "
        "explain; the NAME of a nb2cwl:step=NAME tag, and a loop's split/map/gather parts also "
        "match), assemble, @gpu (steps that need GPUs) or @map (the scattered parts of parallel "
        "loops).")
    group.add_argument("--deployment", metavar="NAME",
                       help="where steps run by default: local, docker, slurm, helm, or a "
                            "deployment of --deployment-file (default: the file's only "
                            "deployment, else local)")
    group.add_argument("--target", action="append", type=_binding, default=[],
                       metavar="STEP=NAME", help="run the steps matching STEP on deployment "
                       "NAME (repeatable; the first match wins), e.g. --target train=slurm "
                       "--target '*'=local")
    group.add_argument("--resources", action="append", type=_binding, default=[],
                       metavar="STEP=SPEC", help="what the matching steps need, SPEC being "
                       "cores=N,memory=SIZE,gpus=N,nodes=N (any of them; repeatable, the first "
                       "match wins), e.g. --resources train=cores=8,memory=32G,gpus=2,nodes=2. "
                       "A loop calling a @gpu_task function needs one GPU. Needs go into the "
                       "CWL ResourceRequirement and the connector's settings (Slurm service, "
                       "Docker container, Helm values)")
    group.add_argument("--image", metavar="IMAGE",
                       help="container image of the docker and helm deployments (python3, "
                            "cloudpickle and the notebook's libraries; see containers/)")
    group.add_argument("--chart", metavar="PATH",
                       help="Helm chart of the helm deployments (default: "
                            "containers/helm/nb2cwl-worker)")
    group.add_argument("--deployment-file", metavar="FILE",
                       help="YAML file with your own StreamFlow deployment definitions "
                            "(a 'deployments' mapping, as in streamflow-configs/); its names "
                            "can be used with --deployment and --target")


def _binding(text: str) -> tuple[str, str]:
    pattern, sep, value = text.partition("=")
    if not sep or not pattern.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected STEP=VALUE, not {text!r}")
    if pattern.strip() in ("cores", "memory", "gpus", "nodes"):
        raise argparse.ArgumentTypeError(f"name the steps first, e.g. '*={text}'")
    return pattern.strip(), value.strip()


def _last_run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workflow", metavar="DIR",
                        help="the workflow folder whose last run's measured seconds per cell "
                             "(cells unchanged since) decide the boundaries and scatters, as "
                             "nb2cwl run into that folder decides them (default: NOTEBOOK-wf "
                             "beside the notebook; ignored with --profile)")


def _check_parser(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser(
        "check", help="run the notebook top to bottom in a kernel (nbclient) and as a "
        "workflow, and compare every code cell's outputs; exit status 0 only when all are "
        "equal",
        description="Run NOTEBOOK top to bottom in a kernel (nbclient, the notebook's "
        "kernelspec) and as a workflow (as nb2cwl run, with the same options), then compare "
        "every code cell's outputs: streams, results and displays (every MIME type, figures "
        "byte for byte), errors (name and value). Only what varies by nature is normalised: "
        "memory addresses, the times %%time and %%timeit print, the kernel's process id in "
        "cells' file names, and progress bars' rewritten lines. The report (also in "
        "OUTPUT/runs/N/nb2cwl-check.json) names, for a differing cell, the step it ran in, "
        "the values it loaded and what explain knew. Exit status: 0 when every cell is "
        "equal, 1 otherwise. In CI: nb2cwl check notebook.ipynb --repeat")
    _common(check)
    _output_options(check, required=False)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--rtol", type=float, metavar="R",
                       help="compare numbers in text outputs with this relative tolerance "
                            "(default: exactly); the report says which cells needed it")
    check.add_argument("--repeat", action="store_true",
                       help="run the notebook twice in a kernel: cells whose outputs differ "
                            "between those runs (unseeded randomness, clocks) are reported "
                            "as nondeterministic, not as differences")
    check.add_argument("--timeout", type=_positive, default=600, metavar="SECONDS",
                       help="the longest one cell may run in the kernel (default 600)")


def _bundle_parsers(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser(
        "export", help="write a reproducible bundle: a zipped Workflow RO-Crate that reruns "
        "elsewhere (unzip B.zip -d DIR && streamflow run DIR/streamflow.yml)")
    _common(export)
    export.add_argument("-o", "--output", required=True, metavar="BUNDLE.zip",
                        help="the zip file to write")
    export.add_argument("--force", action="store_true", help="replace BUNDLE.zip if it exists")
    export.add_argument("--with-run", metavar="OUT",
                        help="include the last completed run of OUT, the directory this "
                             "notebook was compiled into with the same options: StreamFlow's "
                             "provenance (streamflow prov), the executed notebook and outputs")
    export.add_argument("--license", metavar="SPDX",
                        help="the license of the notebook and its data, as an SPDX id "
                             "(e.g. CC-BY-4.0) or a URL, recorded in the crate")
    export.add_argument("--author", metavar="NAME", help="the author recorded in the crate")
    _step_options(export)
    cache = commands.add_parser(
        "cache", help="list the step cache of an output folder, or prune it",
        description="List the step cache of an output folder (OUTPUT/.nb2cwl-cache: one entry "
        "per step run nb2cwl run kept, reused while the step's code and inputs are unchanged), "
        "with each entry's size and last use; or prune it. Anything in it may be deleted when "
        "no run is going: a step whose entry is gone runs again. Pruning waits for no run: it "
        "refuses while one is in progress in the folder (or waits, with --wait).")
    cache.add_argument("target", metavar="OUTPUT_OR_NOTEBOOK",
                       help="the output folder, or the notebook (its default folder, "
                            "NOTEBOOK-wf beside it)")
    cache.add_argument("--older-than", type=float, metavar="DAYS",
                       help="remove the entries no run has used for DAYS days")
    cache.add_argument("--max-size", metavar="SIZE",
                       help="remove the least recently used entries until the cache fits in "
                            "SIZE (500M, 2G, or bytes)")
    cache.add_argument("--clear", action="store_true", help="remove every entry")
    cache.add_argument("--wait", action="store_true",
                       help="wait for a run in progress in the folder, instead of refusing")
    cache.add_argument("--debug", action="store_true", help="show full tracebacks")
    verify = commands.add_parser(
        "verify", help="check a bundle: every file against CHECKSUMS.sha256, the steps' "
        "seal, the RO-Crate; exit status 1 on any difference")
    verify.add_argument("bundle", metavar="DIR", help="the unzipped bundle (or its zip)")
    verify.add_argument("--outputs", metavar="RESULTS",
                        help="also compare the outputs of a rerun (the --outdir of "
                             "streamflow run) with the original run's (bundles made with "
                             "--with-run)")
    verify.add_argument("--digest", metavar="SHA256",
                        help="the bundle digest export printed: the sha256 of "
                             "CHECKSUMS.sha256, so that a consistently rewritten list is "
                             "caught too")
    verify.add_argument("--debug", action="store_true", help="show full tracebacks")
