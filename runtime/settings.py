"""Validated configuration: which model plays each role, what a call costs, the endpoint, caps.

Sources, weakest first: defaults < a TOML file < environment (``PLANLANG_*``, plus the
conventional ``LLM_BASE_URL`` and ``LLM_API_KEY``) < keyword arguments. Complex values
(``roles``) come from the environment as JSON, e.g.
``PLANLANG_ROLES='{"scan": {"model": "small", "price": 0.01}}'``.
The API key is a ``SecretStr``: its repr and str never show it.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


class Role(BaseModel):
    """A role a worker can play: the model that answers and the price of one call."""

    model: str = Field(min_length=1)
    price: float = Field(ge=0.0)


@functools.lru_cache(maxsize=256, typed=True)
def _default_role(model: str, price: float) -> Role:
    # Runs on every call: remembered, and model_construct since the values were validated.
    return Role.model_construct(model=model, price=price)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLANLANG_", extra="forbid")

    roles: dict[str, Role] = Field(default_factory=dict)
    default_model: str = "default"
    default_price: float = Field(default=0.01, ge=0.0)
    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PLANLANG_BASE_URL", "LLM_BASE_URL", "base_url")
    )
    api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PLANLANG_API_KEY", "LLM_API_KEY", "api_key")
    )
    timeout: float = Field(default=60.0, gt=0.0)
    retries: int = Field(default=4, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0.0)
    concurrency: int = Field(default=8, ge=1, le=1024)
    cap: float | None = Field(default=None, ge=0.0)
    max_agents: int = Field(default=1000, ge=1)
    max_tool_calls: int = Field(default=1000, ge=0)  # per run; bounds the tools' hard ceiling
    max_repair_turns: int = Field(default=1, ge=0, le=10)
    max_check_retries: int = Field(default=2, ge=0, le=10)
    # C stack of the run's threads, in MiB (None: the platform's). Plan code that C code walks
    # recursively (CPython hashes nested tuples that way) needs room: planlang sets this.
    thread_stack_mb: int | None = Field(default=None, ge=1, le=4096)
    response_format: Literal["json_schema", "json_object", "none"] = "json_schema"
    # How planlang runs model-written plans: "process" (each in a confined child process, the
    # default when unset) or "inprocess" (only for plans the embedder trusts).
    isolation: Literal["process", "inprocess"] | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://; got {value!r}")
        return value

    def role(self, name: str | None) -> Role:
        """The role ``name``; an unknown name is taken as a model at the default price."""
        found = self.roles.get(name) if name is not None else None
        if found is not None:
            return found
        return _default_role(name or self.default_model, self.default_price)

    @property
    def dearest_price(self) -> float:
        """The highest price any call can have (for hard ceilings)."""
        return max([self.default_price, *(r.price for r in self.roles.values())])

    @classmethod
    def load(cls, toml_path: str | Path | None = None, **overrides: Any) -> Settings:
        """Settings from defaults, an optional TOML file, the environment and ``overrides``."""
        if toml_path is None:
            return cls(**overrides)
        path = Path(toml_path)
        try:
            with path.open("rb") as handle:
                table = tomllib.load(handle)
        except FileNotFoundError:
            raise FileNotFoundError(f"The settings file {str(path)!r} does not exist.") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"The settings file {str(path)!r} is not valid TOML: {exc}") from None
        table = table.get("planlang", table)  # allow a [planlang] table or top-level keys

        class _FromFile(cls):  # type: ignore[valid-type,misc]
            @classmethod
            def settings_customise_sources(
                cls_,
                settings_cls: type[BaseSettings],
                init_settings: PydanticBaseSettingsSource,
                env_settings: PydanticBaseSettingsSource,
                dotenv_settings: PydanticBaseSettingsSource,
                file_secret_settings: PydanticBaseSettingsSource,
            ) -> tuple[PydanticBaseSettingsSource, ...]:
                below = _TableSource(settings_cls, table, env_settings)
                return (init_settings, env_settings, below)

        loaded = _FromFile(**overrides)
        return cls.model_construct(**{name: getattr(loaded, name) for name in cls.model_fields})


class _TableSource(PydanticBaseSettingsSource):
    """A settings source over an already-parsed TOML table, beneath the environment.

    A key the environment sets too is left out: the environment hands its value in under the
    variable's name (``LLM_BASE_URL``), the table under the field's (``base_url``), and
    pydantic, taking one of a field's names, would refuse the other as an unknown key.
    """

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        table: dict[str, Any],
        above: PydanticBaseSettingsSource,
    ) -> None:
        super().__init__(settings_cls)
        self._table = table
        self._above = above

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._table.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        given = {key.lower() for key in self._above()}
        shadowed = set()
        for name, info in self.settings_cls.model_fields.items():
            alias = info.validation_alias
            names = alias.choices if isinstance(alias, AliasChoices) else [alias]
            if any(isinstance(n, str) and n.lower() in given for n in names):
                shadowed.add(name)
        return {key: value for key, value in self._table.items() if key not in shadowed}
