"""``python -m lead audit CORPUS --budget N``: the lead audits a library end to end.

Exit codes: 0 the audit completed; 1 the plan was held, refused or failed after its replans;
2 usage or I/O error (no endpoint, no corpus, unreadable files). The API key comes from the
environment (``LLM_API_KEY``) only and is never printed. With ``--key``
(an answer key) the findings are scored by ``python -m bench score`` in a subprocess: the lead
never imports the benchmark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from lead.audit import AuditSetup, audit, settings_with_roles
from lead.cli_exit import CommandError, run_command
from planlang import PlanRefused
from runtime import Settings, http_client

OK, FAILED, USAGE = 0, 1, 2


class UsageError(CommandError):
    """A mistake in the command line or an unreadable input: exit code 2."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """The lead audits a library: it writes the plan, the gate approves it, the run reports."""


@cli.command("audit", short_help="Audit a library with a plan the lead writes.")
@click.argument("corpus")
@click.option("--budget", type=float, required=True, metavar="CREDITS",
              help="Credits for the whole audit.")  # fmt: skip
@click.option("--endpoint", metavar="URL",
              help="OpenAI-compatible base URL (default: LLM_BASE_URL).")  # fmt: skip
@click.option(
    "--model", metavar="NAME", help="One model name for every role (lead, scan, skeptic)."
)
@click.option("--config", metavar="FILE", help="Settings TOML (roles, prices, concurrency).")
@click.option(
    "--key", metavar="FILE", help="Answer key: score the findings with python -m bench score."
)
@click.option("--out", default="findings.json", show_default=True, metavar="FILE",
              help="Where to write the findings JSON.")  # fmt: skip
@click.option("--ledger", default=".planlang/answers.db", show_default=True, metavar="FILE",
              help="Answer ledger (SQLite).")  # fmt: skip
@click.option("--replans", type=int, default=2, show_default=True, metavar="N", help="Replan cap.")
def audit_command(**options: Any) -> int:
    """Audit CORPUS (a library folder, or a benchmark folder holding audited/) with a plan the
    lead writes."""
    return _audit(SimpleNamespace(**options))


def main(argv: list[str] | None = None) -> int:
    return run_command(cli, argv, "python -m lead")


def _audit(args: SimpleNamespace) -> int:
    if args.budget <= 0:
        raise UsageError(f"--budget must be a positive number of credits, got {args.budget!r}.")
    if args.replans < 0:
        raise UsageError(f"--replans must be 0 or more, got {args.replans!r}.")
    if not Path(args.corpus).is_dir():
        raise UsageError(f"The corpus {args.corpus!r} is not a folder.")
    if args.key and not Path(args.key).is_file():
        raise UsageError(f"The answer key {args.key!r} is not a file.")
    endpoint = args.endpoint or os.environ.get("LLM_BASE_URL")
    if not endpoint:
        raise UsageError(
            "No model endpoint: pass --endpoint URL or set LLM_BASE_URL (an OpenAI-compatible "
            "server, e.g. https://host/v1). For an offline run use python -m bench eval "
            "--model simulated."
        )
    try:
        base = Settings.load(args.config) if args.config else Settings()
        settings = settings_with_roles(base, args.model)
        client = http_client(endpoint, timeout=settings.timeout, retries=settings.retries)
    except (ValueError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
    setup = AuditSetup(client, args.budget, settings, args.ledger, max_replans=args.replans)
    try:
        result = audit(args.corpus, setup)
    except PlanRefused as error:
        print(f"refused: {error}", file=sys.stderr)
        return FAILED
    except ImportError as error:
        raise UsageError(f"The audit kit's words cannot be loaded: {error}.") from None
    finally:
        client.close()
    spent = sum(outcome.credits for outcome in result.outcomes) + result.history.credits
    summary = {
        "status": result.status,
        "reason": result.reason,
        "runs": len(result.outcomes),
        "replans": result.replans,
        "credits": round(spent, 6),
        "findings": result.findings,
        "plan": result.history.attempts[-1].source if result.history.attempts else None,
    }
    try:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        raise UsageError(f"Cannot write the findings to {args.out!r}: {error.strerror}.") from None
    print(f"{result.status}: {len(result.findings)} findings in {args.out} "
          f"({len(result.outcomes)} runs, {spent:g} credits)")  # fmt: skip
    if result.reason:
        print(f"reason: {result.reason}", file=sys.stderr)
    if result.status != "completed":
        return FAILED
    if args.key:
        return score(args.out, args.key)
    return OK


def score(findings: str, key: str) -> int:
    """Score with ``python -m bench score`` in a subprocess (the lead never imports bench)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "score", findings, "--key", key],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return OK if done.returncode == 0 else FAILED


if __name__ == "__main__":
    sys.exit(main())
