"""The nb2cwl command line: parse options, call the API, report errors in one line."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import sys
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING

from nb2cwl import __version__
from nb2cwl.errors import Nb2CwlError
from nb2cwl.options import CompileOptions
from nb2cwl.stopping import Stopped

if TYPE_CHECKING:
    from nb2cwl.ir.model import Workflow
    from nb2cwl.launch import StepServer
    from nb2cwl.parameter_values import RunValues
    from nb2cwl.run_events import RunEvents

# The compiler is imported inside the commands: `nb2cwl run` starts StreamFlow first, so that
# StreamFlow's start-up overlaps with importing the compiler and compiling.

COMMANDS = ("compile", "run", "check", "explain", "graph", "export", "verify", "profile",
            "calibrate")

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


def _parser() -> argparse.ArgumentParser:
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
    graph = commands.add_parser("graph", help="draw the step graph")
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


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv`; return the exit status."""
    whole_process = argv is None  # the nb2cwl command itself, not a caller in Python
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "compile")
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _dispatch(args)
    except Nb2CwlError as exc:
        if exc.exit_status > 128 and whole_process:  # stopped by a signal, and everything
            _ignore_stop_signals()  # is stopped: another one now must not kill the process
        if args.debug:
            traceback.print_exc()
        _error(f"nb2cwl: error: {exc}")
        return exc.exit_status
    except Stopped as stop:  # after the run, while printing its summary
        _error(f"nb2cwl: error: interrupted by {stop.name}")
        return stop.status
    except Exception as exc:
        if args.debug:
            raise
        print(f"nb2cwl: internal error: {type(exc).__name__}: {exc} (run again with --debug "
              "for the traceback, and please report it)", file=sys.stderr)
        return 3


def _ignore_stop_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing to do
            signal.signal(signum, signal.SIG_IGN)


def _error(line: str) -> None:
    # after SIGHUP the terminal may be gone: losing the message must not cost the exit status
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr)


def _last_run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workflow", metavar="DIR",
                        help="the workflow folder whose last run's measured seconds per cell "
                             "(cells unchanged since) decide the boundaries and scatters, as "
                             "nb2cwl run into that folder decides them (default: NOTEBOOK-wf "
                             "beside the notebook; ignored with --profile)")


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "verify":
        return _verify(args)
    if args.command == "profile":
        return _profile(args)
    options = CompileOptions(granularity=getattr(args, "granularity", "auto"),
                             profile=getattr(args, "profile", None),
                             python=getattr(args, "python", "python3"),
                             force=getattr(args, "force", False),
                             scatter=not getattr(args, "no_scatter", False),
                             chunks=getattr(args, "chunks", 0),
                             retries=getattr(args, "retries", 0),
                             scale_learning_rate=getattr(args, "scale_learning_rate", False),
                             retry_delay=getattr(args, "retry_delay", 0),
                             deployment=getattr(args, "deployment", None),
                             targets=tuple(getattr(args, "target", ())),
                             resources=tuple(getattr(args, "resources", ())),
                             image=getattr(args, "image", None), chart=getattr(args, "chart", None),
                             deployment_file=getattr(args, "deployment_file", None),
                             content=getattr(args, "content", None),
                             only_cells=tuple(getattr(args, "cells", ())),
                             keep_values=getattr(args, "keep_values", False))
    if args.command == "run" and (args.sweep or args.sweep_file):
        options = replace(options, swept=_swept_names(args))
    if args.command == "export":
        return _export(args, options)
    if args.command == "calibrate":
        from nb2cwl.calibrate import calibrate

        name, costs = calibrate(options, args.repeats)
        print(f"deployment {name}: one more step costs {costs.step_seconds:.3f} s; values "
              f"cross at {costs.bytes_per_second / 1e6:.0f} MB/s; {costs.cores} cores")
        print(f"kept in {costs.source.split('(')[-1].rstrip(')')}: compiling for {name} now "
              "chooses step boundaries with these figures")
        return 0
    if args.command in ("explain", "graph"):  # the costs the last `nb2cwl run` measured
        from nb2cwl.backends.naming import default_output_dir

        options = replace(options, last_run_in=getattr(args, "workflow", None)
                          or default_output_dir(args.notebook))
    if args.command == "explain":
        from nb2cwl.api import compile_notebook
        from nb2cwl.backends.explain import explain_data, explain_text

        workflow = compile_notebook(args.notebook, options)
        if args.json:
            print(json.dumps(explain_data(workflow), indent=1))
        else:
            sys.stdout.write(explain_text(workflow))
        return 0
    if args.command == "graph":
        from nb2cwl.api import compile_notebook
        from nb2cwl.backends.graph import render_graph
        from nb2cwl.backends.graph_view import workflow_graph

        workflow = compile_notebook(args.notebook, options)
        fmt = args.format or os.path.splitext(args.output)[1].lstrip(".").lower()
        nodes, edges = workflow_graph(workflow)
        text = render_graph(nodes, edges, workflow.notebook_name, fmt)
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {args.output}")
        return 0
    from nb2cwl.backends.naming import default_output_dir

    out_dir = args.output or default_output_dir(args.notebook)
    from nb2cwl.run_lock import RunLock
    from nb2cwl.stopping import stop_on_signals

    if args.command not in ("run", "check"):
        with RunLock(out_dir, args.notebook, "compile", args.wait):
            return _compile(args, options, out_dir)
    # SIGINT, SIGTERM, SIGHUP: stop everything (a wait for the folder too), then exit
    with stop_on_signals(), RunLock(out_dir, args.notebook, args.command, args.wait):
        if args.command == "check":
            return _check(args, options, out_dir)
        return _run(args, options, out_dir)


def _compile(args: argparse.Namespace, options: CompileOptions, out_dir: str) -> int:
    from nb2cwl.api import compile_to_directory

    workflow, _ = compile_to_directory(args.notebook, out_dir, options)
    _warn(workflow)
    print(f"wrote {out_dir}: {len(workflow.steps)} steps")
    print(f"run it with: streamflow run {os.path.join(out_dir, 'streamflow.yml')}  "
          f"(or: nb2cwl run {args.notebook}, with progress)")
    return 0


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


def _check(args: argparse.Namespace, options: CompileOptions, out_dir: str) -> int:
    from nb2cwl.checking import check_notebook, render

    report = check_notebook(args.notebook, out_dir, options, repeat=args.repeat,
                            rtol=args.rtol, timeout=args.timeout)
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        sys.stdout.write(render(report))
    return 0 if report.equal else 1


def _run(args: argparse.Namespace, options: CompileOptions, out_dir: str) -> int:
    from nb2cwl.errors import RunInterrupted
    from nb2cwl.launch import StepServer

    events = None
    if args.events:
        from nb2cwl.run_events import RunEvents

        events = RunEvents(args.events)
    server = StepServer()
    try:
        return _run_with(args, options, out_dir, server, events)
    except BaseException as exc:
        if events is not None:  # the run's end, for whoever follows the events
            status = "cancelled" if isinstance(exc, (RunInterrupted, KeyboardInterrupt)) else \
                "failed"
            events.end(status, str(exc) if isinstance(exc, Nb2CwlError) else
                       f"internal error: {type(exc).__name__}: {exc}")
        raise
    finally:
        server.stop()


def _run_with(args: argparse.Namespace, options: CompileOptions, out_dir: str,
              server: StepServer, events: RunEvents | None = None) -> int:
    from nb2cwl.backends.naming import TIMINGS_FILE
    from nb2cwl.engine_database import repair_database
    from nb2cwl.errors import RunInterrupted
    from nb2cwl.launch import CACHE_DIR, Engine, may_use_kubernetes, run_workflow, take_engine
    from nb2cwl.runtime.timings import ENV as TIMINGS_ENV
    from nb2cwl.stopping import shield

    engine = None
    cache_dir = None if args.no_cache else os.path.join(out_dir, CACHE_DIR)
    timings = os.path.join(os.path.abspath(out_dir), TIMINGS_FILE)
    extra_env = {**(events.environment if events is not None else {}), TIMINGS_ENV: timings}
    try:
        kubernetes = may_use_kubernetes(
            [options.deployment, *(name for _, name in options.targets)],
            [options.deployment_file, options.content or args.notebook])
        with shield():  # StreamFlow starts up while the notebook compiles (or waits warm)
            engine = take_engine(cache_dir, server, kubernetes, args.refresh, extra_env,
                                 tuple(args.cells))
        from nb2cwl.api import compile_to_directory

        workflow, _ = compile_to_directory(args.notebook, out_dir, options)
        open(timings, "w").close()  # compiled with the last run's: this run's from here on
        repaired = repair_database(out_dir)
        if repaired:
            print(f"nb2cwl: note: {repaired}", file=sys.stderr)
        configs, values = _run_config(args, workflow, out_dir)
        with shield():
            server.start(out_dir, options.python, engine.env, workflow.preload,
                         os.path.dirname(os.path.abspath(args.notebook)))
        _warn(workflow)
        if not args.quiet:
            print(f"compiled {workflow.notebook_name}: {len(workflow.steps)} steps in {out_dir}")
    except BaseException as exc:
        if engine is not None:
            engine.stop()
        if isinstance(exc, KeyboardInterrupt):
            signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
            raise RunInterrupted(f"interrupted by {signal.Signals(signum).name} while "
                                 "compiling; nothing ran", signum) from None
        raise
    sweep = values is not None and bool(values.swept)

    def new_engine() -> Engine:  # another combination's StreamFlow process
        return Engine(cache_dir, server, kubernetes, args.refresh, extra_env,
                      tuple(args.cells))

    summary = run_workflow(workflow, out_dir, quiet=args.quiet, debug=args.debug,
                           engine=engine, cache=not args.no_cache, configs=configs,
                           new_engine=new_engine,
                           at_once=_combinations_at_once(options) if sweep else 0,
                           events=events)
    if events is not None:
        events.end("done", executed_notebook=summary.executed_notebook)
    print(f"finished in {summary.seconds:.1f} s: {len(workflow.steps)} steps")
    if values is not None and values.swept:
        from nb2cwl.sweep_summary import summary_table

        table, csv_path = summary_table(summary.executed_notebooks, list(values.swept),
                                        summary.results_dir)
        print(table)
        print(f"{len(summary.executed_notebooks)} executed notebooks in {summary.results_dir}; "
              f"this table: {csv_path}")
    else:
        print(f"executed notebook: {summary.executed_notebook}")
    if summary.written_files:
        shown = ", ".join(summary.written_files[:10])
        more = "" if len(summary.written_files) <= 10 else f" (+{len(summary.written_files) - 10})"
        print(f"files written by the cells: {shown}{more} "
              f"(in {os.path.join(summary.results_dir, 'written-files')})")
    return 0


def _swept_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The parameters a sweep varies (known before compiling: steps they do not reach then
    stay apart from those they do, and run once)."""
    names = [name for name, _ in args.parameter]
    repeated = {name for name in names if names.count(name) > 1}
    if args.sweep_file:
        from nb2cwl.errors import Location
        from nb2cwl.parameter_values import yaml_mapping

        repeated |= set(yaml_mapping(args.sweep_file, Location(os.path.basename(args.notebook))))
    return tuple(sorted(repeated))


def _run_config(args: argparse.Namespace, workflow: Workflow, out_dir: str
                ) -> tuple[list[str] | None, RunValues | None]:
    """The StreamFlow configs of a run with its own parameter values (a sweep: one per
    combination); None: the compiled one."""
    pairs = [tuple(pair) for pair in getattr(args, "parameter", [])]
    files = getattr(args, "parameters_file", [])
    sweep_file = getattr(args, "sweep_file", None)
    if not (pairs or files or sweep_file or getattr(args, "sweep", False)):
        return None, None
    from nb2cwl.backends.writer import write_run_files
    from nb2cwl.parameter_values import read_values

    values = read_values(workflow, pairs, files, args.sweep, sweep_file, args.sweep_method)
    configs = write_run_files(workflow, out_dir, values.fixed,
                              values.combinations() if values.swept else None)
    if values.swept and not args.quiet:
        print(f"sweep: {len(configs)} combinations of " + ", ".join(values.swept)
              + f" ({values.method})")
    return configs, values


def _combinations_at_once(options: CompileOptions) -> int:
    """How many combinations of a sweep run side by side: on a batch system or in containers
    all (the cluster schedules them); on this machine one per core."""
    if options.deployment in (None, "local") and not options.deployment_file and not any(
            name != "local" for _, name in options.targets):
        return max(1, os.cpu_count() or 1)
    return 0


def _warn(workflow: Workflow) -> None:
    for diagnostic in workflow.diagnostics:
        if diagnostic.severity == "warning":
            print(f"nb2cwl: {diagnostic}", file=sys.stderr)


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


def _export(args: argparse.Namespace, options: CompileOptions) -> int:
    from nb2cwl.api import export_notebook
    from nb2cwl.backends.bundle import BundleOptions

    bundle = BundleOptions(with_run=args.with_run, license=args.license, author=args.author,
                           force=args.force)
    workflow, summary = export_notebook(args.notebook, args.output, options, bundle)
    for diagnostic in workflow.diagnostics:
        if diagnostic.severity == "warning":
            print(f"nb2cwl: {diagnostic}", file=sys.stderr)
    for warning in summary.warnings:
        print(f"nb2cwl: warning: {warning}", file=sys.stderr)
    print(f"wrote {summary.path}: {summary.files} files, {len(workflow.steps)} steps"
          + (f", with the run of {args.with_run}" if args.with_run else ""))
    print(f"bundle digest: sha256:{summary.digest} (check it with nb2cwl verify --digest)")
    print(f"rerun it: unzip {summary.path} -d DIR && streamflow run DIR/streamflow.yml "
          "(environment: DIR/environment/requirements.txt)")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from nb2cwl.verify import verify_bundle

    report = verify_bundle(args.bundle, outputs=args.outputs, digest=args.digest)
    for problem in report.problems:
        print(f"nb2cwl: verify: {problem}", file=sys.stderr)
    if not report.ok:
        print(f"nb2cwl: error: {args.bundle} failed verification: {len(report.problems)} "
              "problem(s); do not run it", file=sys.stderr)
        return 1
    print(f"verified {args.bundle}: {report.files} files match CHECKSUMS.sha256, every step "
          "checks the seal, ro-crate-metadata.json is a Workflow RO-Crate 1.0 (ro-crate-py)")
    if args.outputs:
        print(f"outputs: the original run's {report.outputs_checked} output file(s) match "
              f"{args.outputs}")
    print(f"bundle digest: sha256:{report.digest}")
    return 0


def _profile(args: argparse.Namespace) -> int:
    from nb2cwl.profiling import default_output, profile_notebook

    output = args.output or default_output(args.notebook)
    profile = profile_notebook(args.notebook, output, timeout=args.timeout, force=args.force)
    slowest = sorted(profile["cells"].items(), key=lambda item: -item[1].get("seconds", 0))[:3]
    print(f"wrote {output}: {len(profile['cells'])} cells, {profile['total_seconds']:.1f} s "
          "in all; slowest: " + ", ".join(
              f"cell {c.get('index')} {c.get('seconds', 0):.2f} s" for _, c in slowest))
    print(f"use it: nb2cwl run {args.notebook} --profile {output}")
    return 0


def run() -> None:
    """Console-script entry point."""
    from nb2cwl.imports import skip_unused_imports

    skip_unused_imports()
    status = main()
    # Everything is written by now. Without a final collection of the compiler's syntax trees
    # the interpreter exits about 0.3 s sooner.
    gc.freeze()
    sys.exit(status)
