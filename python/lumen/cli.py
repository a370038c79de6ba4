"""The ``lumen`` command line: ``lumen inspect MODEL [--opt-level N] [--json] [--dump-passes DIR]``.

Subcommands are argparse subparsers, each with a ``run(args)`` function returning the exit status,
so more (run, bench, profile) slot in next to ``inspect``. Errors a user can cause (missing file,
invalid model) print one line to stderr and exit 1, without a traceback."""

import argparse
import json
import os
import sys

__all__ = ["main"]


class CommandError(Exception):
    """An error to report as one line, without a traceback."""


def _load(path):
    from . import _onnx

    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not an ONNX model")
    return _onnx.load_onnx(path)


def run_inspect(args):
    model = _load(args.model)
    dump = args.dump_passes or ""
    if dump and dump != "-":
        os.makedirs(dump, exist_ok=True)
    compiled = model.compile(opt_level=args.opt_level, backend=args.backend, dump_passes=dump)
    if args.json:
        json.dump(compiled.report(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(compiled.summary())
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="lumen", description="Lumen inference runtime tools.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    inspect = commands.add_parser(
        "inspect", help="show what optimizing and compiling a model does",
        description="Optimize and compile an ONNX model, then print op counts before/after, "
                    "each pass and its rewrites, fused groups, the memory plan and the backend "
                    "and kernel dtype of every step.")
    inspect.add_argument("model", metavar="MODEL", help="path to an .onnx file")
    inspect.add_argument("--opt-level", type=int, default=2, choices=(0, 1, 2),
                         help="optimization level (default: 2)")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.add_argument("--dump-passes", metavar="DIR",
                         help="write the graph after each pass that changed it into DIR "
                              "('-' for stderr)")
    inspect.add_argument("--backend", default="",
                         help="force every node onto one backend (cpu, reference)")
    inspect.set_defaults(run=run_inspect)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CommandError as e:
        print(f"lumen {args.command}: error: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"lumen {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `lumen inspect m.onnx | head`: stop quietly; point stdout at devnull so the
        # interpreter's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RuntimeError, OSError, ValueError, TypeError) as e:
        # lumen.Error is a RuntimeError: invalid or unsupported models land here.
        message = str(e).strip() or type(e).__name__
        subject = getattr(args, "model", None)
        prefix = f"{subject}: " if subject and subject not in message else ""
        print(f"lumen {args.command}: error: {prefix}{message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
