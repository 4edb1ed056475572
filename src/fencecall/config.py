"""Configuration from a TOML file and the environment.

Looked up in ``$FENCECALL_CONFIG``, else ``$XDG_CONFIG_HOME/fencecall/config.toml`` (default
``~/.config``). Where the file and its folders are, the providers' addresses and API keys come
from the environment; ``FENCECALL_MODEL``, ``_FORMAT``, ``_TOOLS`` and ``_SANDBOX`` are one of
the sources a run's settings are resolved from (:mod:`fencecall.assembly.settings`), above
this file. API keys (``api_key_env``) are held only in memory: nothing here is ever logged.

    model = "openai/gpt-4o-mini"
    format = "markdown"
    tools = ["shell", "save", "patch", "read"]
    max_steps = 30                # model replies per prompt before stopping
    max_tokens = 4096             # output tokens asked of the model per reply
    timeout = 600                 # seconds to wait for the model's server
    retries = 2                   # tries again after a failed request or a broken stream
    sandbox = "workspace-write"   # or "read-only", "off"
    network = false               # let sandboxed commands reach the network
    pass_env = ["GOPATH", "CARGO_*"]   # more variables tools may see (names or globs)
    secrets = ["GITHUB_TOKEN"]    # more variables whose values are redacted from tool output
    telemetry = false             # OpenTelemetry spans and metrics (FENCECALL_TELEMETRY=1)
    telemetry_content = false     # tool arguments and results in spans, cut and redacted
    tool_packages = ["mycompany.tools"]   # packages whose modules define more tools
    near_misses = 3               # replies in a row that ran nothing, despite feedback
    autonomous = false            # one-shot and batch runs end done only by calling complete
    compaction = "summary"        # or "drop", "off": a history that outgrows the window
    result_share = 0.25           # a tool result above this share of the window goes to a file
    background_after = 15         # seconds before a shell command goes on as a job (0: never)
    max_jobs = 8                  # background jobs running at once, per conversation

    [resources]                   # what each tool process may take (bytes; 0: no limit)
    processes = 1024              # processes at once (a fork bomb)
    memory = 8589934592           # memory, 8 GiB (a memory bomb)
    file_size = 4294967296        # any one file a confirmed command writes, 4 GiB
    output = 67108864             # stdout and stderr of a call or a job, 64 MiB
    tmp = 268435456               # each private tmpfs in the sandbox, 256 MiB

    [models."local/smollm2"]      # per model; each is sent only when set
    temperature = 0.2
    top_p = 0.9
    stop = ["<|im_end|>"]
    max_tokens = 512
    context_window = 2048         # prompt + history + reply must fit
    prompt = "compact"            # or "full"; compact is the default for windows <= 8192

    [providers.local]
    kind = "openai"
    base_url = "http://127.0.0.1:8080/v1"

    [mcp.servers.time]            # an MCP server's tools, named time.TOOL
    command = "python"
    args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    env = {}                      # added to the allow-listed environment tools get
    eager = false                 # start at session start, not at first use
    confirm = "hints"             # ask unless the tool is marked read-only; or always, never

    [mcp.servers.docs]
    url = "http://127.0.0.1:8765/mcp"                      # Streamable HTTP
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }   # ${VAR} from the environment
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, get_args

from .accounting import Limits, Price
from .errors import UserError, unknown_settings
from .parsing import MARKDOWN, CallFormat, get_format
from .tools.mcp import DeclarationError, McpServerConfig, from_table
from .tools.runtime.limits import ResourceLimits
from .tools.runtime.sandbox import SandboxPolicy

ProviderKind = Literal["openai", "anthropic"]
PROVIDER_KINDS: tuple[ProviderKind, ...] = get_args(ProviderKind)


class ConfigError(UserError, ValueError):
    """The configuration is invalid; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    key_required: bool = False

    def api_key(self, env: Mapping[str, str]) -> str | None:
        return env.get(self.api_key_env) if self.api_key_env else None


def _builtin_providers(env: Mapping[str, str]) -> dict[str, ProviderConfig]:
    openai_url = env.get("OPENAI_BASE_URL")
    return {
        "openai": ProviderConfig("openai", openai_url, "OPENAI_API_KEY",
                                 key_required=openai_url is None),
        "anthropic": ProviderConfig("anthropic", env.get("ANTHROPIC_BASE_URL"),
                                    "ANTHROPIC_API_KEY",
                                    key_required="ANTHROPIC_BASE_URL" not in env),
        "local": ProviderConfig("openai", env.get("FENCECALL_LOCAL_BASE_URL",
                                                  "http://127.0.0.1:8080/v1"),
                                "FENCECALL_LOCAL_API_KEY"),
    }


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a model samples; each setting is sent only when set, so a server keeps its own
    defaults otherwise."""

    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()


PromptMode = Literal["full", "compact"]
Compaction = Literal["summary", "drop", "off"]
"""How a conversation that outgrows the context window is kept inside it: older exchanges
replaced by the model's summary, or left out, or nothing (requests go as they are)."""
PROMPT_MODES: tuple[PromptMode, ...] = get_args(PromptMode)
COMPACT_BELOW = 8192
"""A context window of at most this many tokens gets the compact prompt unless told."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Settings for one model (``[models."provider/name"]``), over the file's defaults."""

    sampling: Sampling = Sampling()
    max_tokens: int | None = None
    context_window: int | None = None
    """Tokens the model can hold: prompt, history and reply together."""
    prompt: PromptMode | None = None
    limits: Limits = field(default_factory=Limits)
    """This model's own budget and time limit (over the file's top-level ones)."""
    price: Price | None = None
    """USD per million tokens, over ``genai-prices``' list price."""

    def prompt_mode(self) -> PromptMode:
        """``compact`` where chosen, or where the context window is small."""
        if self.prompt is not None:
            return self.prompt
        small = self.context_window is not None and self.context_window <= COMPACT_BELOW
        return "compact" if small else "full"


@dataclass(frozen=True, slots=True)
class Config:
    model: str | None = None
    format: CallFormat = MARKDOWN
    tools: tuple[str, ...] | None = None
    max_steps: int = 30
    max_tokens: int = 4096
    timeout: float = 600.0
    retries: int = 2
    home: Path = field(default_factory=lambda: Path.home() / ".local/share/fencecall")
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    sandbox: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE
    network: bool = False
    pass_env: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    telemetry: bool = False
    telemetry_content: bool = False
    tool_packages: tuple[str, ...] = ()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    models: Mapping[str, ModelSettings] = field(default_factory=dict)
    near_misses: int = 3
    """Replies in a row that ran nothing despite feedback before the agent gives up."""
    autonomous: bool = False
    """Runs nobody watches (a one-shot prompt, a batch task) end done only when the model
    calls the complete tool; an interactive chat never does."""
    limits: Limits = field(default_factory=Limits)
    """``budget_usd``, ``budget_tokens`` and ``time_limit`` of every run."""
    compaction: Compaction = "summary"
    result_share: float = 0.25
    """A tool result above this share of the context window is saved to a file; the model
    gets its start and end and the path to read the rest."""
    background_after: float = 15.0
    """Seconds a shell command runs before it goes on as a background job (0: never)."""
    max_jobs: int = 8
    """Background jobs that may run at once in one conversation."""
    resources: ResourceLimits = field(default_factory=ResourceLimits)
    """What each process a tool starts may take (the ``[resources]`` table)."""
    path: Path | None = None
    """The configuration file this was read from (or would have been, had it existed)."""

    def model_settings(self, model: str) -> ModelSettings:
        """The settings of ``provider/name`` (the defaults when it has no table)."""
        return self.models.get(model, ModelSettings())

    def secret_env_names(self) -> frozenset[str]:
        """Environment variables holding secrets: the providers' API keys, those the MCP
        server declarations refer to, and the ones the user marked. Tools never see them;
        their values are redacted from tool output."""
        keys = (p.api_key_env for p in self.providers.values() if p.api_key_env)
        mcp = (name for server in self.mcp_servers for name in server.secret_names)
        return frozenset((*keys, *mcp, *self.secrets))

    def secret_values(self, env: Mapping[str, str]) -> dict[str, str]:
        """The secrets set in ``env``, by variable name."""
        return {name: env[name] for name in self.secret_env_names() if env.get(name)}


def check_apart(config: Config, folders: Iterable[tuple[str, Path]]) -> None:
    """Refuse a run whose model may write what decides fencecall's next run: its home (the
    conversation logs there say what ``--resume`` restores), which must neither lie in a
    writable root nor hold one, and the configuration file, which must not lie in one (a
    workspace beside the file or below its folder is fine: the model may write there, not the
    file). ``folders`` are (what it is, path): the workspace and the other writable roots.
    Real paths are compared, so a link leading into a root counts as inside it."""
    home = config.home.expanduser().resolve()
    file = config.path.expanduser().resolve() if config.path is not None else None
    for what, folder in folders:
        real = folder.expanduser().resolve()
        if home.is_relative_to(real):
            raise ConfigError(f"the fencecall home folder {home} is inside {what} {real}, "
                              "where the model may write: set FENCECALL_HOME to a folder "
                              "outside it, or choose another workspace or --root folder")
        if real.is_relative_to(home):
            raise ConfigError(f"{what} {real} is inside the fencecall home folder {home}, "
                              "where the model must not write: choose a folder outside it, "
                              "or set FENCECALL_HOME elsewhere")
        if file is not None and file.is_relative_to(real):
            raise ConfigError(f"the configuration file {file} is inside {what} {real}, where "
                              "the model may write (and so set the next run's sandbox): set "
                              "FENCECALL_CONFIG to a file outside it, or choose another "
                              "workspace or --root folder")


def config_path(env: Mapping[str, str]) -> Path:
    if "FENCECALL_CONFIG" in env:
        return Path(env["FENCECALL_CONFIG"]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "fencecall" / "config.toml"


def _read_file(path: Path, explicit: bool) -> dict[str, Any]:
    if not path.exists():
        if explicit:
            raise ConfigError(f"{path}: config file not found")
        return {}
    import tomllib  # only where there is a file to read

    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from err


TOP_LEVEL = frozenset({
    "model", "format", "tools", "max_steps", "max_tokens", "timeout", "retries", "sandbox",
    "network", "pass_env", "secrets", "telemetry", "telemetry_content", "tool_packages",
    "near_misses", "models", "providers", "mcp", "budget_usd", "budget_tokens", "time_limit",
    "autonomous", "compaction", "result_share", "background_after", "max_jobs", "resources"})
"""The keys the file's top level may hold; any other is an error, never silently ignored."""
PROVIDER_KEYS = frozenset({"kind", "base_url", "api_key_env"})
MODEL_KEYS = frozenset({"temperature", "top_p", "stop", "max_tokens", "context_window",
                        "prompt", "price", "budget_usd", "budget_tokens", "time_limit"})
PRICE_KEYS = frozenset({"input", "output", "cache_read", "cache_write"})


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """The configuration: built-in defaults, then the file (and the providers' addresses, the
    home from the environment)."""
    env = os.environ if env is None else env
    path = config_path(env)
    data = _read_file(path, "FENCECALL_CONFIG" in env)
    _known_keys(data, TOP_LEVEL, "", path)
    if "model" in data and not (isinstance(data["model"], str) and data["model"]):
        raise ConfigError(f'{path}: model must be a string such as "openai/gpt-4o"')
    if "tools" in data and not (isinstance(data["tools"], list)
                                and all(isinstance(t, str) for t in data["tools"])):
        raise ConfigError(f"{path}: tools must be a list of tool names")
    providers = _builtin_providers(env)
    tables = data.get("providers", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: providers must hold [providers.NAME] tables")
    for name, table in tables.items():
        if not isinstance(table, dict) or table.get("kind") not in PROVIDER_KINDS:
            kinds = " or ".join(map(repr, PROVIDER_KINDS))
            raise ConfigError(f"{path}: providers.{name}.kind must be {kinds}")
        if "api_key" in table:
            raise ConfigError(f"{path}: providers.{name}.api_key: keep keys out of files; "
                              "set api_key_env to the name of an environment variable")
        _known_keys(table, PROVIDER_KEYS, f"providers.{name}", path)
        for key in ("base_url", "api_key_env"):
            if key in table and not (isinstance(table[key], str) and table[key]):
                raise ConfigError(f"{path}: providers.{name}.{key} must be a string")
        providers[name] = ProviderConfig(table["kind"], table.get("base_url"),
                                         table.get("api_key_env"))
    try:
        fmt = get_format(data.get("format", MARKDOWN.name))
    except ValueError as err:
        raise ConfigError(f"{path}: format: {err}") from err
    tool_list = data.get("tools")
    max_steps = _number(data, "max_steps", 30, path, minimum=1)
    max_tokens = _number(data, "max_tokens", 4096, path, minimum=1)
    retries = _number(data, "retries", 2, path, minimum=0)
    timeout = _number(data, "timeout", 600.0, path, minimum=0.001, whole=False)
    try:
        sandbox = SandboxPolicy(data.get("sandbox", "workspace-write"))
    except ValueError:
        choices = ", ".join(policy.value for policy in SandboxPolicy)
        raise ConfigError(f"{path}: sandbox must be one of {choices}") from None
    network, telemetry = data.get("network", False), data.get("telemetry", False)
    content, autonomous = data.get("telemetry_content", False), data.get("autonomous", False)
    for key, value in (("network", network), ("telemetry", telemetry),
                       ("telemetry_content", content), ("autonomous", autonomous)):
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: {key} must be true or false")
    compaction = data.get("compaction", "summary")
    if compaction not in get_args(Compaction):
        raise ConfigError(f"{path}: compaction must be one of "
                          f"{', '.join(get_args(Compaction))}")
    home = env.get("FENCECALL_HOME")
    return Config(
        model=data.get("model"),
        format=fmt,
        tools=tuple(t.strip() for t in tool_list if t.strip()) if tool_list else None,
        max_steps=int(max_steps),
        max_tokens=int(max_tokens),
        timeout=float(timeout),
        retries=int(retries),
        home=Path(home).expanduser() if home else Config().home,
        providers=providers,
        sandbox=sandbox,
        network=network,
        pass_env=_names(data, "pass_env", path),
        secrets=_names(data, "secrets", path),
        telemetry=telemetry,
        telemetry_content=content,
        tool_packages=_names(data, "tool_packages", path),
        mcp_servers=_mcp_servers(data, path, env),
        models=_models(data, path),
        near_misses=int(_number(data, "near_misses", 3, path, minimum=0)),
        autonomous=autonomous,
        limits=_limits(data, "", path),
        compaction=compaction,
        result_share=float(_number(data, "result_share", 0.25, path, minimum=0.01,
                                   whole=False)),
        background_after=float(_number(data, "background_after", 15.0, path, minimum=0,
                                       whole=False)),
        max_jobs=int(_number(data, "max_jobs", 8, path, minimum=1)),
        resources=_resources(data, path),
        path=path,
    )


def _resources(data: Mapping[str, Any], path: Path) -> ResourceLimits:
    """The ``[resources]`` table: whole numbers of bytes (or processes), 0 for no limit."""
    table = data.get("resources", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: resources must be a table ([resources])")
    default = ResourceLimits()
    known = [name for name in ResourceLimits.__dataclass_fields__]
    _known_keys(table, known, "resources", path)
    return ResourceLimits(**{name: int(_number(table, name, getattr(default, name), path,
                                               minimum=0, name=f"resources.{name}"))
                             for name in known})


def _models(data: Mapping[str, Any], path: Path) -> dict[str, ModelSettings]:
    tables = data.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f'{path}: models must hold [models."provider/name"] tables')
    found = {}
    for name, table in tables.items():
        where = f"models.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {where} must be a table")
        _known_keys(table, MODEL_KEYS, where, path)
        number = {key: _number(table, key, 0, path, minimum=0, whole=False)
                  for key in ("temperature", "top_p") if key in table}
        whole = {key: int(_number(table, key, 1, path, minimum=1))
                 for key in ("max_tokens", "context_window") if key in table}
        stop = table.get("stop", [])
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
            raise ConfigError(f"{path}: {where}.stop must be a list of strings")
        prompt = table.get("prompt")
        if prompt is not None and prompt not in PROMPT_MODES:
            raise ConfigError(f"{path}: {where}.prompt must be one of {', '.join(PROMPT_MODES)}")
        found[name] = ModelSettings(
            Sampling(number.get("temperature"), number.get("top_p"), tuple(stop)),
            whole.get("max_tokens"), whole.get("context_window"), prompt,
            _limits(table, f"{where}.", path), _price(table, where, path))
    return found


def _limits(table: Mapping[str, Any], where: str, path: Path) -> Limits:
    """``budget_usd``, ``budget_tokens`` and ``time_limit`` of ``table`` (None where unset)."""
    def given(key: str, whole: bool) -> float | None:
        if key not in table:
            return None
        return _number(table, key, 0, path, minimum=0 if whole else 1e-9, whole=whole,
                       name=where + key)

    tokens = given("budget_tokens", True)
    return Limits(given("budget_usd", False), None if tokens is None else int(tokens),
                  given("time_limit", False))


def _price(table: Mapping[str, Any], where: str, path: Path) -> Price | None:
    """``price = {input = 0.15, output = 0.6, cache_read = 0.075}``: USD per million."""
    if "price" not in table:
        return None
    price = table["price"]
    if not isinstance(price, dict):
        raise ConfigError(f"{path}: {where}.price must be a table of USD per million tokens, "
                          "e.g. {input = 0.15, output = 0.6}")
    _known_keys(price, PRICE_KEYS, f"{where}.price", path)
    for key in ("input", "output"):
        if key not in price:
            raise ConfigError(f"{path}: {where}.price.{key} is missing (USD per million "
                              "tokens)")
    value = {key: Decimal(str(_number(price, key, 0, path, minimum=0, whole=False,
                                      name=f"{where}.price.{key}")))
             for key in PRICE_KEYS if key in price}
    return Price(value["input"], value["output"], value.get("cache_read"),
                 value.get("cache_write"))


def _mcp_servers(data: Mapping[str, Any], path: Path,
                 env: Mapping[str, str]) -> tuple[McpServerConfig, ...]:
    section = data.get("mcp", {})
    servers = section.get("servers", {}) if isinstance(section, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcp must hold only [mcp.servers.NAME] tables")
    _known_keys(section, {"servers"}, "mcp", path)
    found = []
    for name, table in servers.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: mcp.servers.{name} must be a table")
        try:
            found.append(from_table(name, table, env))
        except DeclarationError as err:
            raise ConfigError(f"{path}: {err}") from None
    return tuple(found)


def _known_keys(table: Mapping[str, Any], known: Iterable[str], where: str, path: Path) -> None:
    problem = unknown_settings(table, known, where)
    if problem is not None:
        raise ConfigError(f"{path}: {problem}")


def _number(data: Mapping[str, Any], key: str, default: float, path: Path, *, minimum: float,
            whole: bool = True, name: str | None = None) -> float:
    value = data.get(key, default)
    numeric = isinstance(value, int) or (isinstance(value, float) and not whole)
    if isinstance(value, bool) or not numeric or value < minimum:
        kind = "an integer" if whole else "a number"
        raise ConfigError(f"{path}: {name or key} must be {kind} of at least {minimum:g}, "
                          f"got {value!r}")
    return float(value)


def _names(data: Mapping[str, Any], key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: {key} must be a list of environment variable names")
    return tuple(value)
