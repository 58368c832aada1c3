"""The command line of the evaluation: ``python -m bench eval`` (see ``bench.eval``).

Exit 0 when every design completed, 1 when one did not, 2 for usage or I/O errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from bench.eval import EvalReport, Setup, evaluate_repeated, render, verdicts
from bench.simulated import SIMULATED, SimulatedModel
from lead.audit import settings_with_roles
from lead.scout import audited_root
from runtime import Settings, http_client

__all__ = ["build_parser", "main"]

OK, FAILED, USAGE = 0, 1, 2
DESCRIPTION = "Five plan designs and three ablations on one corpus, scored."


# -- command line ------------------------------------------------------------------------


class UsageError(Exception):
    """A mistake in the command line or an unreadable input: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m bench eval", description=DESCRIPTION)
    parser.add_argument(
        "--corpus", default="data/algos", help="benchmark folder (audited/, hidden/)"
    )
    # --model as `python -m lead run --model` has it: one model name for every role, at the
    # endpoint; offline the only model is the simulated one. --name is its older spelling.
    parser.add_argument("--model", default=None, help=f"with --endpoint: the model of every role "
                        f"(default: the roles' configured models); without: '{SIMULATED}', the "
                        "only offline model (default)")  # fmt: skip
    parser.add_argument("--endpoint", help="OpenAI-compatible base URL (a real model)")
    parser.add_argument("--name", help="the same as --model with --endpoint")
    parser.add_argument("--budget", type=float, default=20.0, help="credits per design")
    parser.add_argument("--shard-tokens", type=int, default=20_000, help="shards of design 3, 4")
    parser.add_argument("--context-tokens", type=int, default=100_000, help="one agent's context")
    parser.add_argument("--ledger", help="answer ledger for --endpoint (collect, then replay)")
    parser.add_argument("--out", help="write the markdown report here (default: stdout)")
    parser.add_argument("--json", help="also write the rows and verdicts as JSON here")
    parser.add_argument("--seed", type=int, default=0, help="first seed of the simulated model")
    parser.add_argument("--repeats", type=int, help="runs per design, seeds seed.. (default: "
                        "5 simulated, 1 with --endpoint); the table shows their means")  # fmt: skip
    return parser


def _setup(args: argparse.Namespace) -> tuple[Setup, str]:
    corpus = Path(args.corpus)
    key_path = corpus / "hidden" / "answer_key.json"
    if not (corpus / "audited").is_dir() or not key_path.is_file():
        raise UsageError(f"The corpus {args.corpus!r} needs audited/ and hidden/answer_key.json.")
    if args.budget <= 0:
        raise UsageError(f"--budget must be a positive number of credits, got {args.budget!r}.")
    try:
        key = json.loads(key_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise UsageError(f"The answer key {str(key_path)!r} cannot be read: {error}.") from None
    if args.endpoint:
        name = _endpoint_model(args)
        settings = settings_with_roles(Settings(), name)
        endpoint = args.endpoint
        ledger = args.ledger or ":memory:"
        setup = Setup(corpus, key, settings, lambda _seed: http_client(endpoint), args.budget,
                      args.shard_tokens, args.context_tokens, ledger)  # fmt: skip
        return setup, f"{name or 'configured models'} at {endpoint}"
    for option, value in (("--model", args.model), ("--name", args.name)):
        if value is not None and (option == "--name" or value != SIMULATED):
            raise UsageError(
                f"{option} {value!r} needs --endpoint (a real model at an OpenAI-compatible "
                f"URL); offline use --model {SIMULATED}."
            )
    settings = settings_with_roles(Settings())
    root = audited_root(corpus)
    setup = Setup(corpus, key, settings, lambda seed: SimulatedModel(root, key, seed), args.budget,
                  args.shard_tokens, args.context_tokens, seed=args.seed)  # fmt: skip
    return setup, SIMULATED


def _endpoint_model(args: argparse.Namespace) -> str | None:
    """The model name for every role at the endpoint (None: the roles' configured models)."""
    if args.model == SIMULATED:
        raise UsageError(f"--model {SIMULATED} is the offline model and cannot be used with "
                         "--endpoint; give the endpoint's model name, or no --model for the "
                         "roles' configured models.")  # fmt: skip
    if args.model and args.name and args.model != args.name:
        raise UsageError(f"--model {args.model!r} and --name {args.name!r} name different "
                         "models; give one of them.")  # fmt: skip
    return args.model or args.name


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation; 0 when every design completed, 1 when one did not, 2 usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        setup, model = _setup(args)
        repeats = args.repeats if args.repeats is not None else (1 if args.endpoint else 5)
        if repeats < 1:
            raise UsageError(f"--repeats must be 1 or more, got {repeats!r}.")
        runs = evaluate_repeated(setup, repeats)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE
    kind = "simulated model" if model == SIMULATED else "real model"
    report = EvalReport(f"Evaluation of plan designs ({kind})", str(setup.corpus), model,
                        setup.budget, runs, verdicts(runs),
                        "python -m bench eval " + " ".join(argv))  # fmt: skip
    text = render(report)
    try:
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        if args.json:
            Path(args.json).write_text(
                json.dumps(asdict(report), indent=1) + "\n", encoding="utf-8"
            )
    except OSError as error:
        print(f"error: cannot write the report: {error.strerror}.", file=sys.stderr)
        return USAGE
    return OK if all(r.status == "completed" for r in runs) else FAILED


if __name__ == "__main__":
    sys.exit(main())
