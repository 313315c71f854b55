"""`nb2cwl run`: compile with StreamFlow and the step server starting meanwhile, run, report.

The command line is parsed in nb2cwl.cli; this is what the `run` command does with it: the
run's events, its StreamFlow process (nb2cwl.launch) and step server, the values of its
parameters (a sweep: one StreamFlow config per combination), and the summary printed at the
end. Errors are raised as Nb2CwlError subclasses for the CLI to print in one line.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import TYPE_CHECKING

from nb2cwl.errors import Nb2CwlError
from nb2cwl.options import CompileOptions
from nb2cwl.stopping import Stopped

if TYPE_CHECKING:
    from nb2cwl.ir.model import Workflow
    from nb2cwl.parameter_values import RunValues
    from nb2cwl.run_events import RunEvents
    from nb2cwl.step_server import StepServer


def run_command(args: argparse.Namespace, options: CompileOptions, out_dir: str) -> int:
    """`nb2cwl run NOTEBOOK`: compile into `out_dir`, run, print the summary; 0 when done."""
    import shutil

    from nb2cwl.errors import OptionError, RunInterrupted
    from nb2cwl.kept_runs import ENV as KEEP_ENV
    from nb2cwl.kept_runs import parse_keep, prune_runs
    from nb2cwl.run_events import RunEvents
    from nb2cwl.scratch import remove_stale, scratch_folder
    from nb2cwl.step_cache import LIMIT_ENV, apply_limit, parse_size
    from nb2cwl.step_server import take_step_server

    remove_stale()  # what killed runs left
    # the steps' own events tell each step's outcome (reused, failed) and where it runs, for
    # the progress shown; kept in --events FILE, or privately for this run only
    private = None if args.events else scratch_folder("events")
    events = RunEvents(args.events or os.path.join(private, "events.jsonl"),
                       private=private is not None)
    limit = args.cache_limit or os.environ.get(LIMIT_ENV)
    if limit:
        try:
            parse_size(limit)
        except ValueError as exc:
            raise OptionError(f"--cache-limit: {exc}") from None
    kept = getattr(args, "keep_runs", None) or os.environ.get(KEEP_ENV)
    try:
        keep = parse_keep(kept) if kept else None
    except ValueError as exc:
        raise OptionError(f"--keep-runs: {exc}") from None
    server = take_step_server()  # the standby's, warm, in a long-lived process
    work = scratch_folder("work")  # StreamFlow's folders of the local steps (nb2cwl.scratch)
    try:
        return _run_with(args, options, out_dir, server, events, work)
    except BaseException as exc:  # the run's end, for whoever follows the events
        status = "cancelled" if isinstance(exc, (RunInterrupted, KeyboardInterrupt)) else \
            "failed"
        events.end(status, str(exc) if isinstance(exc, Nb2CwlError) else
                   f"internal error: {type(exc).__name__}: {exc}")
        raise
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        pruned = apply_limit(out_dir, limit)
        if pruned:
            print(f"nb2cwl: note: {pruned}", file=sys.stderr)
        old_runs = prune_runs(out_dir, keep)
        if old_runs:
            print(f"nb2cwl: note: removed {len(old_runs)} older run folder(s) (--keep-runs "
                  f"{keep}): {', '.join(old_runs)}", file=sys.stderr)


def _run_with(args: argparse.Namespace, options: CompileOptions, out_dir: str,
              server: StepServer, events: RunEvents, work: str) -> int:
    from nb2cwl.analysis.preload import notebook_preload
    from nb2cwl.backends.naming import TIMINGS_FILE
    from nb2cwl.engine_database import prune_database, repair_database
    from nb2cwl.engine_errors import missing_library_advice
    from nb2cwl.errors import RunError, RunInterrupted
    from nb2cwl.launch import CACHE_DIR, Engine, may_use_kubernetes, run_workflow, take_engine
    from nb2cwl.runtime.timings import ENV as TIMINGS_ENV
    from nb2cwl.scratch import WORKDIR_ENV
    from nb2cwl.stopping import shield

    engine = None
    cache_dir = None if args.no_cache else os.path.join(out_dir, CACHE_DIR)
    timings = os.path.join(os.path.abspath(out_dir), TIMINGS_FILE)
    extra_env = {**events.environment, TIMINGS_ENV: timings, WORKDIR_ENV: work}
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
        from nb2cwl.api import compile_for_directory

        compiled = compile_for_directory(args.notebook, out_dir, options)
        workflow = compiled.workflow
        if _own_values(args):  # the run files are written beside the workflow, here
            with shield():
                compiled.write()
            compiled = None
        open(timings, "w").close()  # compiled with the last run's: this run's from here on
        repaired = repair_database(out_dir)
        if repaired:
            print(f"nb2cwl: note: {repaired}", file=sys.stderr)
        prune_database(out_dir)  # only the last completed run's records are read again
        configs, values = _run_config(args, workflow, out_dir)
        with shield():
            server.preloading(workflow.preload)
        print_warnings(workflow)
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
                               events=events, retries=options.retries, compiled=compiled,
                               scratch=work)
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


def swept_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The parameters a sweep varies (known before compiling: steps they do not reach then
    stay apart from those they do, and run once)."""
    names = [name for name, _ in args.parameter]
    repeated = {name for name in names if names.count(name) > 1}
    if args.sweep_file:
        from nb2cwl.errors import Location
        from nb2cwl.parameter_values import yaml_mapping

        repeated |= set(yaml_mapping(args.sweep_file, Location(os.path.basename(args.notebook))))
    return tuple(sorted(repeated))


def _own_values(args: argparse.Namespace) -> bool:
    """Whether the run gives parameters values of its own (-p, -f, a sweep)."""
    return bool(getattr(args, "parameter", []) or getattr(args, "parameters_file", [])
                or getattr(args, "sweep_file", None) or getattr(args, "sweep", False))


def _run_config(args: argparse.Namespace, workflow: Workflow, out_dir: str
                ) -> tuple[list[str] | None, RunValues | None]:
    """The StreamFlow configs of a run with its own parameter values (a sweep: one per
    combination); None: the compiled one."""
    pairs = [tuple(pair) for pair in getattr(args, "parameter", [])]
    files = getattr(args, "parameters_file", [])
    sweep_file = getattr(args, "sweep_file", None)
    if not _own_values(args):
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


def print_warnings(workflow: Workflow) -> None:
    """The compiler's warnings, one line each on stderr."""
    for diagnostic in workflow.diagnostics:
        if diagnostic.severity == "warning":
            print(f"nb2cwl: {diagnostic}", file=sys.stderr)
