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
    pass

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
        from nb2cwl.run_command import swept_names

        options = replace(options, swept=swept_names(args))
    if args.command == "export":
        return _export(args, options)
    if args.command == "image":
        return _image(args, options)
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
        from nb2cwl.run_command import run_command

        return run_command(args, options, out_dir)


def _compile(args: argparse.Namespace, options: CompileOptions, out_dir: str) -> int:
    from nb2cwl.api import compile_to_directory
    from nb2cwl.run_command import print_warnings

    workflow, _ = compile_to_directory(args.notebook, out_dir, options)
    print_warnings(workflow)
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
              f"In [{c.get('prompt') or ' '}] {c.get('seconds', 0):.2f} s" for _, c in slowest))
    print(f"use it: nb2cwl run {args.notebook} --profile {output}")
    return 0


def _image(args: argparse.Namespace, options: CompileOptions) -> int:
    from nb2cwl.api import compile_notebook
    from nb2cwl.backends.bundle.texts import lock_warnings
    from nb2cwl.backends.step_image import build_image, write_step_image
    from nb2cwl.errors import Location

    workflow = compile_notebook(args.notebook, options)
    folder = args.output or os.path.splitext(args.notebook)[0] + "-image"
    lock, tag = write_step_image(workflow, folder, args.base, args.force, args.tag)
    for warning in lock_warnings(lock):  # what the image will lack: the user adds it
        _error(f"nb2cwl: warning: {warning}")
    pinned = ", ".join(f"{p.name} {p.version}" for p in lock.packages
                       if any(r.startswith("imported as") for r in p.reasons))
    print(f"wrote {folder}: Dockerfile and requirements.txt (Python {lock.python}; "
          f"{len(lock.packages)} packages pinned{': ' + pinned if pinned else ''})")
    if args.build:
        build_image(folder, tag, Location(workflow.notebook_name))
        print(f"built {tag}")
    else:
        print(f"build it: docker build -t {tag} {folder}")
    print(f"run the steps in it: nb2cwl run {args.notebook} --deployment docker --image {tag}")
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
