"""Command line: ``python -m cute_bind {explain,bench,check,contract,cache}`` and ``--version`` (also ``cute-bind``)."""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


_BENCH_DESCRIPTION = """\
Time how long one launch of the same compiled CuTe DSL function takes on the
host (the CPU work before the kernel runs), along every path side by side:
calling the compiled function directly, cute_bind's prepared launch, and the
lowest-cost call into the same compiled code. With a GPU it times a GPU
kernel; without one, a host-only function of the same shape. Every path is
first checked to write bitwise the same output as the direct call."""

_BENCH_EPILOG = """\
reading the output:
  host us/launch (median)  microseconds of host time per launch, the median
                           over interleaved rounds (lower is better); 'min'
                           is the fastest round
  over cheapest call       the median minus the cheapest call into the same
                           compiled code that the run measured (the lowest
                           'bare' row): what a path costs beyond the call
                           itself; below zero only by timing noise
  direct reused / path     how many times faster than calling the compiled
                           function directly (1.0x = the same; 0.5x = twice
                           as slow)
  CUDA-event us/launch     (GPU only) the same launches timed on the GPU stream
  What each path is        one line per row, in plain words
  Verdict                  the result in one sentence
  checks                   each path's output compared bitwise with the direct
                           call; the exit status is 1 if any differs
Numbers vary between runs and machines: compare rows of one run only. Without
a GPU the figures are CPU time of host-only functions; the output starts with
the documented GPU run for comparison (docs/benchmarks.md)."""


def program() -> str:
    """How the user started the command line, for usage lines: ``python -m cute_bind`` or ``cute-bind``."""
    return "python -m cute_bind" if os.path.basename(sys.argv[0]) == "__main__.py" else "cute-bind"


_EXPLAIN_DESCRIPTION = """\
Print a diagnostic's catalog entry: what the code means, an example that
raises it, and the fix. Every error cute_bind raises carries such a code
(CB101, CB204, ...); without a code (or with --list) every code is listed
with its one-line summary."""

_CONTRACT_DESCRIPTION = """\
Check that the installed nvidia-cutlass-dsl provides everything cute_bind
reads from it (the functions, classes and internals it calls, checked by
what they are, not by the version number), and say which version it is and
whether that version is in the tested range. Exit status 1 when something is
missing (each missing piece is named)."""


def _version() -> str:
    from . import __version__
    from .dsl import dsl_version

    return f"cute_bind {__version__} (nvidia-cutlass-dsl {dsl_version()})"


def _explain(args: argparse.Namespace) -> int:
    from .diagnostics import CATALOG, lookup, render_entry

    if args.list or not args.code:
        for _, d in sorted(CATALOG.items()):  # by code, as the docs list them
            flag = " (retired)" if d.retired else ""
            print(f"{d.code}  {d.slug:28s} {d.summary}{flag}")
        return 0
    try:
        entry = lookup(args.code)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    sys.stdout.write(render_entry(entry))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import main as bench_main

    return bench_main(args)


def _check(argv: list[str]) -> int:
    from .static.checker import main as check_main

    return check_main(argv, prog=f"{program()} check")


def _contract(args: argparse.Namespace) -> int:
    from . import dsl

    problems = dsl.check_contract(deep=True)
    tested = "tested" if dsl.version_supported() else "NOT in the tested range: runs with warning CB503 if the contract holds"
    print(f"nvidia-cutlass-dsl {dsl.dsl_version()} (supported: {dsl.SUPPORTED_VERSIONS}; {tested})")
    if not problems:
        f = dsl.features()
        print(
            f"  features: re-entry validation {'yes' if f.spec_reentry else 'no'}, base_dsl/ on sys.path {'yes' if f.base_dsl_on_path else 'no'}, disk cache {'yes' if f.disk_cache else 'no (compiles in every process)'}"
        )
    for p in problems:
        print("  missing:", p)
    print("contract: ok" if not problems else "contract: BROKEN")
    return 1 if problems else 0


def _cache(args: argparse.Namespace) -> int:
    from .cache.cli import main as cache_main

    return cache_main(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``cute-bind`` and ``python -m cute_bind``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        return _check(argv[1:])
    prog = program()
    if argv[:1] == ["lsp"]:  # the language server (the `lsp` extra); its own options, like check
        from .lsp import main as lsp_main

        return lsp_main(argv[1:], prog=f"{prog} lsp")
    parser = argparse.ArgumentParser(prog=prog, description="cute_bind tools")
    parser.add_argument("--version", action="version", version=_version(), help="print cute_bind's version and the DSL's, then exit")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("explain", help="print a diagnostic's catalog entry (or list all)", description=_EXPLAIN_DESCRIPTION)
    p.add_argument("code", nargs="?", help="e.g. CB204")
    p.add_argument("--list", action="store_true", help="list every code")
    p.set_defaults(func=_explain)
    p = sub.add_parser(
        "bench",
        help="launch-overhead benchmark (GPU kernel if a GPU is present, else host-only)",
        description=_BENCH_DESCRIPTION,
        epilog=_BENCH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--repeats", type=int, default=21, help="timed repeats per path (median reported)")
    p.add_argument("--iters", type=int, default=20000, help="launches per repeat")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--host-only", action="store_true", help="use the host-only function even when a GPU is present")
    p.add_argument(
        "--workload",
        choices=("all", "pointers", "tensors", "specialize", "torch", "coldstart"),
        default="all",
        help="pointers: the 5-argument pointer scale kernel; tensors: the 2-tensor dynamic-layout kernel with new tensors each step; "
        "specialize: kernel(...) on a hit, a key switch, a miss with a cached compile and a cold compile; "
        "torch: that kernel as a cute_bind.torch op, eager and under torch.compile (not part of all; needs torch); "
        "coldstart: fresh processes from import to first launch with a cold and a warm disk cache (not part of all)",
    )
    p.set_defaults(func=_bench)
    sub.add_parser("check", help="static eligibility check of source files (see cute-bind check --help)")
    sub.add_parser("lsp", help="language server: the check's errors, quick fixes and hover in editors (see cute-bind lsp --help)")
    p = sub.add_parser(
        "contract", help="check the installed nvidia-cutlass-dsl provides what cute_bind needs", description=_CONTRACT_DESCRIPTION
    )
    p.set_defaults(func=_contract)
    p = sub.add_parser("cache", help="the disk compile cache: info (list entries), clear, prune")
    from .cache.cli import add_arguments

    add_arguments(p)
    p.set_defaults(func=_cache)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # the reader went away (`cute-bind cache info | head`): stop quietly, as other tools do, and
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the broken pipe


if __name__ == "__main__":
    sys.exit(main())
