"""Command line of the benchmark: ``python -m bench plant | score | survey | eval``.

A click group; each command returns its exit code: 0 ok, 1 refused or failed (fewer bugs than
asked, malformed findings), 2 usage or I/O error. User mistakes are reported in one sentence on
stderr, never as a traceback (``lead.cli_exit``). ``eval`` is loaded only when it is asked for:
it imports the runtime and the lead, which planting and scoring do not need.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from bench.corpus import Corpus, CorpusError, load_dir, load_package
from bench.key import KeyFileError, write_corpus
from bench.plant import MIN_EXAMPLES, Outcome, plant
from bench.score import match
from bench.survey import survey
from lead.cli_exit import CommandError, run_command

OK, FAILED, USAGE = 0, 1, 2


class UsageError(CommandError):
    """A mistake in the command line or an unreadable input: exit code 2."""


class Refused(CommandError):
    """Valid input the command cannot accept: exit code 1."""

    exit_code, prefix = FAILED, "refused"


def _corpus(args: SimpleNamespace) -> Corpus:
    if bool(args.source) == bool(args.package):
        raise UsageError("Give the library as --source DIR or --package NAME (one of them).")
    try:
        return load_package(args.package) if args.package else load_dir(args.source)
    except CorpusError as error:
        raise UsageError(str(error)) from None


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


def run_plant(args: SimpleNamespace) -> int:
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


def run_score(args: SimpleNamespace) -> int:
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


def run_survey(args: SimpleNamespace) -> int:
    started = time.perf_counter()
    result = survey(_corpus(args), args.timeout, args.workers)
    for line in result.lines():
        print(line)
    if args.failures:
        for path, reason in sorted(result.failures.items()):
            print(f"  {path}: {reason}")
    print(f"time: {time.perf_counter() - started:.1f} s")
    return OK


# -- the click group -----------------------------------------------------------------------


class _Commands(click.Group):
    """The group; ``eval`` is imported from ``bench.eval_cli`` only when it is named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), "eval"])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "eval":
            from bench.eval_cli import command

            return command
        return super().get_command(ctx, name)


def _source_options(run: Any) -> Any:
    """--source | --package, --timeout and --workers, shared by plant and survey."""
    for option in reversed([
        click.option("--source", metavar="DIR|FILE.py",
                     help="Library folder (a package, or a root holding one), or a module."),
        click.option("--package", metavar="NAME",
                     help="Installed package whose source is the corpus."),
        click.option("--timeout", type=float, default=60.0, show_default=True, metavar="S",
                     help="Seconds per run of one file's examples."),
        click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
                     metavar="N", help="Proofs run at once."),
    ]):  # fmt: skip
        run = option(run)
    return run


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """The planted-bug benchmark: plant proven bugs, score findings, evaluate plan designs."""


@cli.command("plant", short_help="Plant proven bugs into an audited copy of a library.")
@_source_options
@click.option("--out", required=True, metavar="DIR", help="Output folder (audited/, hidden/).")
@click.option("--bugs", type=click.IntRange(min=1), required=True, metavar="N",
              help="Bugs to plant.")  # fmt: skip
@click.option("--seed", type=int, required=True, metavar="S", help="Random seed.")
@click.option("--attempts", type=click.IntRange(min=1), default=12, show_default=True,
              metavar="N", help="Edits tried per file.")  # fmt: skip
@click.option("--quiet", is_flag=True, help="No progress lines.")
def plant_command(**options: Any) -> int:
    """Plant N one-line bugs, each proven by the library's own examples, and write the audited
    copy (examples removed) to DIR/audited and the answer key to DIR/hidden."""
    return run_plant(SimpleNamespace(**options))


@cli.command("score", short_help="Score an audit's findings against an answer key.")
@click.argument("findings")
@click.option("--key", required=True, metavar="FILE", help="hidden/answer_key.json.")
@click.option("--window", type=click.IntRange(min=0), default=5, show_default=True,
              metavar="LINES", help="Lines of slack around a bug's line.")  # fmt: skip
@click.option("--library", metavar="DIR", help="Audited copy (default: ../audited by the key).")
def score_command(**options: Any) -> int:
    """Score FINDINGS (a JSON list of findings, or {"findings": [...]}) against the key; print
    recall, precision, the bugs found and missed as JSON."""
    return run_score(SimpleNamespace(**options))


@cli.command("survey", short_help="Count a library's doctest examples and passing files.")
@_source_options
@click.option("--failures", is_flag=True, help="List the files whose examples do not pass.")
def survey_command(**options: Any) -> int:
    """Survey a library: files, tokens, shards, files with examples and files whose examples
    all pass (the files a bug can be planted in)."""
    return run_survey(SimpleNamespace(**options))


def main(argv: list[str] | None = None) -> int:
    return run_command(cli, argv, "python -m bench")


if __name__ == "__main__":
    sys.exit(main())
