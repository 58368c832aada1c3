"""Command line of the benchmark: ``python -m bench plant | score | survey | eval``.

A dispatcher of subcommands, each a function that returns the exit code: 0 ok, 1 refused or
failed (fewer bugs than asked, malformed findings), 2 usage or I/O error. User mistakes are
reported in one sentence on stderr, never as a traceback. A new subcommand registers itself in
``COMMANDS`` with a function that adds its arguments and one that runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.corpus import Corpus, CorpusError, load_dir, load_package
from bench.key import KeyFileError, write_corpus
from bench.plant import MIN_EXAMPLES, Outcome, plant
from bench.score import match
from bench.survey import survey

OK, FAILED, USAGE = 0, 1, 2


class UsageError(Exception):
    """A mistake in the command line or an unreadable input: exit code 2."""


class Refused(Exception):
    """Valid input the command cannot accept: exit code 1."""


def _add_source(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--source", help="library folder (a package, or a root holding one)")
    group.add_argument("--package", help="installed package whose source is the corpus")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per example run")
    parser.add_argument("--workers", type=int, default=2, help="parallel proofs (default 2)")


def _corpus(args: argparse.Namespace) -> Corpus:
    try:
        return load_package(args.package) if args.package else load_dir(args.source)
    except CorpusError as error:
        raise UsageError(str(error)) from None


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value!r}")
    return number


def _non_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value!r}")
    return number


def add_plant(parser: argparse.ArgumentParser) -> None:
    _add_source(parser)
    parser.add_argument("--out", required=True, help="output folder (audited/ and hidden/)")
    parser.add_argument("--bugs", type=_positive, required=True, help="bugs to plant")
    parser.add_argument("--seed", type=int, required=True, help="random seed")
    parser.add_argument("--attempts", type=_positive, default=12, help="edits tried per file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def _check_out(corpus: Corpus, out: Path) -> None:
    """Refuse an output folder that would overwrite the library or be read as part of it:
    ``out/audited`` and ``out/hidden`` are replaced, and a key inside the library would be
    copied into the next audited copy."""
    top, target = (corpus.root / corpus.package).resolve(), out.resolve()
    replaced = (target / "audited", target / "hidden")
    if (
        target == top
        or top in target.parents
        or any(folder == top or folder in top.parents for folder in replaced)
    ):
        raise UsageError(
            f"The output folder {str(out)!r} overlaps the library {str(top)!r}; "
            "choose a folder outside it."
        )


def run_plant(args: argparse.Namespace) -> int:
    corpus = _corpus(args)
    out = Path(args.out)
    _check_out(corpus, out)
    started = time.perf_counter()

    def progress(outcome: Outcome) -> None:
        if not args.quiet:
            state = "planted" if outcome.planted else outcome.skipped or "no proven edit"
            print(f"  {outcome.path}: {state}", file=sys.stderr)

    planting = plant(
        corpus, args.bugs, args.seed, args.timeout, args.attempts, args.workers, progress
    )
    try:
        key = write_corpus(corpus, planting, out, args.seed)
    except OSError as error:
        raise UsageError(f"Cannot write the output folder {str(out)!r}: {error}.") from None
    seconds = time.perf_counter() - started
    kinds = Counter(bug["kind"] for bug in key["bugs"])
    skipped = [outcome for outcome in planting.outcomes if outcome.skipped]
    print(f"planted {len(key['bugs'])} of {args.bugs} bugs into {out}")
    print(f"files visited: {len(planting.outcomes)} of {planting.eligible} eligible")
    print(f"files skipped: {len(skipped)} (reasons in {out / 'hidden' / 'plant_report.json'})")
    print("bugs per kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    share = planting.doctest_seconds / (seconds * args.workers) if seconds else 0.0
    print(
        f"time: {seconds:.1f} s, doctests {planting.doctest_seconds:.1f} s "
        f"({share:.0%} of {args.workers} workers' time)"
    )
    if not planting.eligible:
        raise Refused(
            f"No file of {corpus.name!r} has {MIN_EXAMPLES} doctest examples and a function "
            "with examples of its own, so no bug can be proven (python -m bench survey counts "
            "them)."
        )
    if len(key["bugs"]) < args.bugs:
        raise Refused(f"Only {len(key['bugs'])} of the {args.bugs} bugs asked for could be proven.")
    return OK


def add_score(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("findings", help="JSON list of findings (or {'findings': [...]})")
    parser.add_argument("--key", required=True, help="hidden/answer_key.json")
    parser.add_argument("--window", type=_non_negative, default=5, help="lines of slack")
    parser.add_argument("--library", help="audited copy (default: ../audited next to the key)")


def run_score(args: argparse.Namespace) -> int:
    try:
        data = json.loads(Path(args.findings).read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"Cannot read the findings {args.findings!r}: {error.strerror}.") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"The findings {args.findings!r} are not JSON: {error.msg}.") from None
    findings = data.get("findings") if isinstance(data, dict) else data
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise Refused(f"The findings {args.findings!r} must be a list of objects.")
    if not Path(args.key).is_file():
        raise UsageError(f"The key {args.key!r} is not a file.")
    try:
        score = match(findings, args.key, args.window, args.library)
    except KeyFileError as error:
        raise UsageError(str(error)) from None
    print(json.dumps(score.to_json(), indent=1))
    return OK


def add_survey(parser: argparse.ArgumentParser) -> None:
    _add_source(parser)
    parser.add_argument("--failures", action="store_true", help="list files that do not pass")


def run_survey(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    result = survey(_corpus(args), args.timeout, args.workers)
    for line in result.lines():
        print(line)
    if args.failures:
        for path, reason in sorted(result.failures.items()):
            print(f"  {path}: {reason}")
    print(f"time: {time.perf_counter() - started:.1f} s")
    return OK


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: list[Command] = [
    ("plant", add_plant, run_plant),
    ("score", add_score, run_score),
    ("survey", add_survey, run_survey),
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("eval", help="evaluate plan designs (python -m bench eval --help)")
    for name, add, run in COMMANDS:
        sub = commands.add_parser(name, help=(run.__doc__ or name).strip().splitlines()[0])
        add(sub)
        sub.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:  # the evaluation has its own parser (bench/eval_cli.py)
        from bench.eval_cli import main as run_eval

        return run_eval(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "workers", 1) < 1:
            raise UsageError(f"--workers must be 1 or more, got {args.workers!r}.")
        return int(args.run(args))
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE
    except Refused as error:
        print(f"refused: {error}", file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
