"""The command line of the evaluation: ``python -m bench eval`` (see ``bench.eval``).

Three ways to run it: offline with the simulated model (the default); ``--endpoint URL`` with a
real model, every answer kept in ``--ledger`` with a manifest beside it (``bench.manifest``);
``--replay LEDGER``, which re-scores such a run from its ledger and sends nothing. Exit 0 when
every design completed, 1 when one did not, 2 for usage or I/O errors.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from bench import manifest
from bench.eval import DESIGN_IDS, Setup, evaluate_repeated
from bench.report import build_report, render
from bench.simulated import SIMULATED, SimulatedModel
from lead.audit import settings_with_roles
from lead.cli_exit import CommandError, run_command
from lead.scout import audited_root
from runtime import Settings, http_client

__all__ = ["command", "main"]

OK, FAILED, USAGE = 0, 1, 2
DEFAULT_LEDGER = ".planlang/eval-answers.db"


class UsageError(CommandError):
    """A mistake in the command line or an unreadable input: exit code 2."""


@click.command(
    "eval",
    short_help="Evaluate plan designs on a planted corpus.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--corpus",
    default="data/algos",
    show_default=True,
    metavar="DIR",
    help="Benchmark folder (audited/, hidden/).",
)
# --model as `python -m lead audit --model` has it: one model name for every role, at the
# endpoint; offline the only model is the simulated one. --name is its older spelling.
@click.option(
    "--model",
    metavar="MODEL",
    help="with --endpoint: the model of every role "
    f"(default: the roles' configured models); without: '{SIMULATED}', the only "
    "offline model (default).",
)
@click.option("--endpoint", metavar="URL", help="OpenAI-compatible base URL (a real model).")
@click.option("--name", metavar="MODEL", help="The same as --model with --endpoint.")
@click.option(
    "--budget",
    type=float,
    default=20.0,
    show_default=True,
    metavar="CREDITS",
    help="Credits per design.",
)
@click.option(
    "--shard-tokens",
    type=int,
    default=20_000,
    show_default=True,
    metavar="T",
    help="Shard size of designs 3 and 4.",
)
@click.option(
    "--context-tokens",
    type=int,
    default=100_000,
    show_default=True,
    metavar="C",
    help="The simulated model's context: a read beyond it is one agent alone.",
)
@click.option(
    "--ledger",
    metavar="FILE",
    help=f"Answer ledger for --endpoint, a manifest beside it (default: {DEFAULT_LEDGER}).",
)
@click.option("--out", metavar="FILE", help="Write the markdown report here (default: stdout).")
@click.option(
    "--json", "json_out", metavar="FILE", help="Also write the rows and verdicts as JSON here."
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    metavar="S",
    help="First seed of the simulated model.",
)
@click.option("--repeats", type=int, metavar="R", help="Runs per design, seeds S.. (default: "
              "5 simulated, 1 with --endpoint), pooled with 95% intervals.")  # fmt: skip
@click.option(
    "--designs",
    metavar="IDS",
    help=f"Only these designs, comma-separated (default: all: {','.join(DESIGN_IDS)}).",
)
@click.option(
    "--replay",
    metavar="LEDGER",
    help="Re-score a run collected with --endpoint from its ledger and manifest; nothing is sent.",
)
@click.pass_context
def command(ctx: click.Context, **options: Any) -> int:
    """Five plan designs and three ablations on one corpus, scored.

    Exit 0 when every design completed, 1 when one did not, 2 for a usage error.
    """
    corpus_given = ctx.get_parameter_source("corpus") is click.core.ParameterSource.COMMANDLINE
    return _evaluate(SimpleNamespace(**options, corpus_given=corpus_given), _command_line(ctx))


def _command_line(ctx: click.Context) -> str:
    """The command that repeats this run: the options given on the command line."""
    words = ["python -m bench eval"]
    for param in ctx.command.params:
        given = ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.COMMANDLINE
        if given and isinstance(param, click.Option):
            words += [param.opts[0], str(ctx.params[param.name or ""])]
    return " ".join(words)


def _designs(args: SimpleNamespace) -> frozenset[str] | None:
    if not args.designs:
        return None
    chosen = [d.strip() for d in args.designs.split(",") if d.strip()]
    unknown = [d for d in chosen if d not in DESIGN_IDS]
    if unknown or not chosen:
        raise UsageError(f"--designs {args.designs!r}: no design {', '.join(unknown) or ''!r}; "
                         f"the designs are {', '.join(DESIGN_IDS)}.")  # fmt: skip
    return frozenset(chosen)


def _setup(args: SimpleNamespace) -> tuple[Setup, str]:
    corpus = Path(args.corpus)
    key = _key(corpus, args.corpus)
    if args.budget <= 0:
        raise UsageError(f"--budget must be a positive number of credits, got {args.budget!r}.")
    designs = _designs(args)
    if args.endpoint:
        name = _endpoint_model(args)
        settings = settings_with_roles(Settings(), name)
        endpoint = args.endpoint
        ledger = args.ledger or DEFAULT_LEDGER
        Path(ledger).parent.mkdir(parents=True, exist_ok=True)
        setup = Setup(corpus, key, settings, lambda _seed: http_client(endpoint), args.budget,
                      args.shard_tokens, args.context_tokens, ledger, args.seed,
                      designs)  # fmt: skip
        return setup, f"{name or 'configured models'} at {endpoint}"
    for option, value in (("--model", args.model), ("--name", args.name)):
        if value is not None and (option == "--name" or value != SIMULATED):
            raise UsageError(
                f"{option} {value!r} needs --endpoint (a real model at an OpenAI-compatible "
                f"URL); offline use --model {SIMULATED}."
            )
    settings = settings_with_roles(Settings())
    root = audited_root(corpus)
    context = args.context_tokens

    def simulated(seed: int) -> SimulatedModel:
        return SimulatedModel(root, key, seed, context_tokens=context)

    setup = Setup(corpus, key, settings, simulated, args.budget, args.shard_tokens,
                  args.context_tokens, seed=args.seed, designs=designs)  # fmt: skip
    return setup, SIMULATED


def _key(corpus: Path, given: str) -> dict[str, Any]:
    key_path = corpus / "hidden" / "answer_key.json"
    if not (corpus / "audited").is_dir() or not key_path.is_file():
        raise UsageError(f"The corpus {given!r} needs audited/ and hidden/answer_key.json.")
    try:
        return dict(json.loads(key_path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as error:
        raise UsageError(f"The answer key {str(key_path)!r} cannot be read: {error}.") from None


def _replay_setup(args: SimpleNamespace) -> tuple[Setup, str, int, str]:
    """The collected run of ``--replay LEDGER``: its setup, model, repeats and command."""
    for option in ("endpoint", "model", "name", "designs", "repeats"):
        if getattr(args, option) is not None:
            raise UsageError(f"--replay re-runs what its manifest says; --{option} cannot be "
                             "given with it.")  # fmt: skip
    try:
        data = manifest.read(args.replay, Path(args.corpus) if args.corpus_given else None)
    except manifest.ManifestError as error:
        raise UsageError(str(error)) from None
    corpus, options = Path(data["corpus"]), data["options"]
    setup = Setup(corpus, _key(corpus, data["corpus"]), manifest.settings_of(data),
                  lambda _seed: None, options["budget"], options["shard_tokens"],  # type: ignore[arg-type,return-value]
                  options["context_tokens"], args.replay, data["seeds"][0],
                  frozenset(data["designs"]), replay=True)  # fmt: skip
    return setup, data["model"], len(data["seeds"]), data["command"]


def _collect_manifest(setup: Setup, repeats: int, model: str, endpoint: str, command: str) -> None:
    manifest.write(setup.ledger_path, corpus=setup.corpus, settings=setup.settings,
                   designs=sorted(setup.designs or DESIGN_IDS),
                   seeds=[setup.seed + i for i in range(repeats)],
                   options={"budget": setup.budget, "shard_tokens": setup.shard_tokens,
                            "context_tokens": setup.context_tokens},
                   endpoint=endpoint, model=model, command=command)  # fmt: skip


def _endpoint_model(args: SimpleNamespace) -> str | None:
    """The model name for every role at the endpoint (None: the roles' configured models)."""
    if args.model == SIMULATED:
        raise UsageError(f"--model {SIMULATED} is the offline model and cannot be used with "
                         "--endpoint; give the endpoint's model name, or no --model for the "
                         "roles' configured models.")  # fmt: skip
    if args.model and args.name and args.model != args.name:
        raise UsageError(f"--model {args.model!r} and --name {args.name!r} name different "
                         "models; give one of them.")  # fmt: skip
    return args.model or args.name


def _evaluate(args: SimpleNamespace, command_line: str) -> int:
    if args.replay:
        setup, model, repeats, command_line = _replay_setup(args)
    else:
        setup, model = _setup(args)
        repeats = args.repeats if args.repeats is not None else (1 if args.endpoint else 5)
        if repeats < 1:
            raise UsageError(f"--repeats must be 1 or more, got {repeats!r}.")
        if args.endpoint:
            _collect_manifest(setup, repeats, model, args.endpoint, command_line)
    rounds = evaluate_repeated(setup, repeats)
    kind = "simulated model" if model == SIMULATED else "real model"
    report = build_report(f"Evaluation of plan designs ({kind})", str(setup.corpus), model,
                          setup.budget, rounds, setup.key, command_line,
                          simulated=model == SIMULATED)  # fmt: skip
    text = render(report)
    try:
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        if args.json_out:
            Path(args.json_out).write_text(
                json.dumps(asdict(report), indent=1) + "\n", encoding="utf-8"
            )
    except OSError as error:
        raise UsageError(f"cannot write the report: {error.strerror}.") from None
    return OK if all(r.status == "completed" for r in report.runs) else FAILED


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation; 0 when every design completed, 1 when one did not, 2 usage."""
    return run_command(command, argv, "python -m bench eval")


if __name__ == "__main__":
    sys.exit(main())
