"""The nb2cwl command line: parse options, call the API, report errors in one line."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shlex
import signal
import sys
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING

from nb2cwl.cli_parser import COMMANDS, build_parser
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

def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv`; return the exit status."""
    whole_process = argv is None  # the nb2cwl command itself, not a caller in Python
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "compile")
    parser = build_parser()
    args = parser.parse_args(argv)
    args.given = argv[1:]  # as typed, after the command (for the hints that repeat them)
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


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "verify":
        return _verify(args)
    if args.command == "profile":
        return _profile(args)
    if args.command == "cache":
        from nb2cwl.backends.naming import default_output_dir
        from nb2cwl.step_cache import cache_command

        folder = args.target if os.path.isdir(args.target) else default_output_dir(args.target)
        print("\n".join(cache_command(folder, args.older_than, args.max_size, args.clear,
                                       args.wait)))
        return 0
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
        from nb2cwl.backends.deployments import plan_deployments
        from nb2cwl.backends.explain import explain_data, explain_text

        workflow = compile_notebook(args.notebook, options)
        try:  # where steps run, when the deployments can be resolved here (the run checks)
            plan = plan_deployments(workflow, options)
        except Nb2CwlError:
            plan = None
        if args.json:
            print(json.dumps(explain_data(workflow, plan), indent=1))
        else:
            sys.stdout.write(explain_text(workflow, plan))
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
    print(f"run it with: streamflow run {shlex.quote(os.path.join(out_dir, 'streamflow.yml'))}  "
          f"(or: nb2cwl run {shlex.join(args.given)}, with progress)")
    return 0


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
    import shutil
    import tempfile

    from nb2cwl.errors import OptionError, RunInterrupted
    from nb2cwl.launch import StepServer
    from nb2cwl.run_events import RunEvents
    from nb2cwl.step_cache import LIMIT_ENV, apply_limit, parse_size

    # the steps' own events tell each step's outcome (reused, failed) and where it runs, for
    # the progress shown; kept in --events FILE, or privately for this run only
    private = None if args.events else tempfile.mkdtemp(prefix="nb2cwl-events-")
    events = RunEvents(args.events or os.path.join(private, "events.jsonl"),
                       private=private is not None)
    limit = args.cache_limit or os.environ.get(LIMIT_ENV)
    if limit:
        try:
            parse_size(limit)
        except ValueError as exc:
            raise OptionError(f"--cache-limit: {exc}") from None
    server = StepServer()
    try:
        return _run_with(args, options, out_dir, server, events)
    except BaseException as exc:  # the run's end, for whoever follows the events
        status = "cancelled" if isinstance(exc, (RunInterrupted, KeyboardInterrupt)) else \
            "failed"
        events.end(status, str(exc) if isinstance(exc, Nb2CwlError) else
                   f"internal error: {type(exc).__name__}: {exc}")
        raise
    finally:
        server.stop()
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        pruned = apply_limit(out_dir, limit)
        if pruned:
            print(f"nb2cwl: note: {pruned}", file=sys.stderr)


def _run_with(args: argparse.Namespace, options: CompileOptions, out_dir: str,
              server: StepServer, events: RunEvents) -> int:
    from nb2cwl.analysis.preload import notebook_preload
    from nb2cwl.backends.naming import TIMINGS_FILE
    from nb2cwl.engine_database import repair_database
    from nb2cwl.engine_errors import missing_library_advice
    from nb2cwl.errors import RunError, RunInterrupted
    from nb2cwl.launch import CACHE_DIR, Engine, may_use_kubernetes, run_workflow, take_engine
    from nb2cwl.runtime.timings import ENV as TIMINGS_ENV
    from nb2cwl.stopping import shield

    engine = None
    cache_dir = None if args.no_cache else os.path.join(out_dir, CACHE_DIR)
    timings = os.path.join(os.path.abspath(out_dir), TIMINGS_FILE)
    extra_env = {**events.environment, TIMINGS_ENV: timings}
    try:
        kubernetes = may_use_kubernetes(
            [options.deployment, *(name for _, name in options.targets)],
            [options.deployment_file, options.content or args.notebook])
        beside = os.path.dirname(os.path.abspath(args.notebook))
        with shield():  # StreamFlow starts up while the notebook compiles (or waits warm)
            engine = take_engine(cache_dir, server, kubernetes, args.refresh, extra_env,
                                 tuple(args.cells))
            # and the step server, importing the notebook's opening libraries meanwhile
            server.start(options.python, engine.env,
                         notebook_preload(args.notebook, options.content), beside)
        from nb2cwl.api import compile_to_directory

        workflow, _ = compile_to_directory(args.notebook, out_dir, options)
        open(timings, "w").close()  # compiled with the last run's: this run's from here on
        repaired = repair_database(out_dir)
        if repaired:
            print(f"nb2cwl: note: {repaired}", file=sys.stderr)
        configs, values = _run_config(args, workflow, out_dir)
        with shield():
            server.preloading(workflow.preload)
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

    try:
        summary = run_workflow(workflow, out_dir, quiet=args.quiet, debug=args.debug,
                               engine=engine, cache=not args.no_cache, configs=configs,
                               new_engine=new_engine,
                               at_once=_combinations_at_once(options) if sweep else 0,
                               events=events)
    except RunError as exc:
        advice = None if isinstance(exc, RunInterrupted) else missing_library_advice(
            str(exc), options.python)
        if advice is None:
            raise
        raise RunError(f"{exc}\n{advice}") from None
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


_SHOWN_PROBLEMS = 20  # problems listed one by one; the rest are counted


def _verify(args: argparse.Namespace) -> int:
    from nb2cwl.verify import verify_bundle

    report = verify_bundle(args.bundle, outputs=args.outputs, digest=args.digest)
    for problem in report.problems[:_SHOWN_PROBLEMS]:
        print(f"nb2cwl: verify: {problem}", file=sys.stderr)
    if len(report.problems) > _SHOWN_PROBLEMS:
        print(f"nb2cwl: verify: ... and {len(report.problems) - _SHOWN_PROBLEMS} more",
              file=sys.stderr)
    if report.added:
        print(f"nb2cwl: verify: note: added beside the bundle's files, not part of it and not "
              f"read by it: {report.added_summary()}", file=sys.stderr)
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
