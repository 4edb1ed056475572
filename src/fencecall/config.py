"""Configuration from a TOML file and the environment.

Looked up in ``$FENCECALL_CONFIG``, else ``$XDG_CONFIG_HOME/fencecall/config.toml`` (default
``~/.config``). Where the file and its folders are, the providers' addresses and API keys come
from the environment; ``FENCECALL_MODEL``, ``_FORMAT``, ``_TOOLS`` and ``_SANDBOX`` are one of
the sources a run's settings are resolved from (:mod:`fencecall.assembly._run_settings`), above
this file. API keys (``api_key_env``) are held only in memory: nothing here is ever logged.
Each key is declared once, by its :class:`Config` field (its default, and the reader that
checks it); a key a setting was once called (:data:`RENAMED`) is still read as its new name.

    model = "openai/gpt-4o-mini"
    format = "markdown"
    tools = ["shell", "save", "patch", "read"]
    max_steps = 30                # model replies per prompt before stopping
    max_tokens = 4096             # output tokens asked of the model per reply
    request_timeout = 600         # seconds to wait for the model's server (was: timeout)
    retries = 2                   # tries again after a failed request or a broken stream
    sandbox = "workspace-write"   # or "read-only", "off"
    network = false               # let sandboxed commands reach the network
    environment = "sandbox"       # where tools run: "host", "sandbox", "container:IMAGE"
    container_cli = "auto"        # "podman" or "docker" for containers (auto: one that works)
    pass_env = ["GOPATH", "CARGO_*"]   # more variables tools may see (names or globs)
    secrets = ["GITHUB_TOKEN"]    # more variables whose values are redacted from tool output
    telemetry = false             # OpenTelemetry spans and metrics (FENCECALL_TELEMETRY=1)
    telemetry_content = false     # tool arguments and results in spans, cut and redacted
    tool_packages = ["mycompany.tools"]   # packages whose modules define more tools
    feedback_limit = 3            # replies in a row that ran nothing despite feedback
                                  # (was: near_misses)
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

    [permissions]                 # calls that run unasked, and calls refused (deny wins)
    allow = ["shell(git status *)", "save(src/**)"]
    deny = ["shell(rm *)", "read(**/.env)"]

    [models."local/smollm2"]      # per model; each is sent only when set
    temperature = 0.2
    top_p = 0.9
    stop = ["<|im_end|>"]
    max_tokens = 512
    context_window = 2048         # prompt + history + reply must fit
    prompt = "compact"            # or "full"; compact is the default for windows <= 8192
    vision = false                # takes no images: each is sent as a note (default true)

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

    [[hooks]]                     # a command of yours, run on the host at an event
    event = "pre_tool"            # or session_start, prompt, post_tool, stop, session_end
    matcher = "shell|mcp.github.*"   # the tools it is for (pre_tool, post_tool; default all)
    command = "~/bin/check-call"  # run with /bin/sh -c; a list is run as it is
    timeout = 60                  # seconds before it is killed
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import Field, dataclass, field, fields
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, get_args

from .accounting import Limits
from .defaults import (
    BACKGROUND_AFTER,
    COMPACTION,
    FEEDBACK_LIMIT,
    MAX_JOBS,
    MAX_STEPS,
    MAX_TOKENS,
    REQUEST_TIMEOUT,
    RESULT_SHARE,
    RETRIES,
)
from .environments._choice import CHOICES, parse_environment
from .errors import UserError, new_names, unknown_settings
from .parsing import FORMATS, MARKDOWN, CallFormat
from .realpath import inside, real_path
from .sandbox import ResourceLimits, SandboxPolicy
from .tools.permission_rules import PermissionRules, RuleError, parse_rule
from .tools.user_hooks import HookDeclarationError, UserHook, read_hooks

if TYPE_CHECKING:  # prices, containers and MCP servers: imported where a file names them
    from .accounting import Price
    from .tools.mcp import McpServerConfig

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
    logprobs: bool = False
    """Ask for each generated token's log probability (OpenAI-compatible servers only)."""


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
    vision: bool = True
    """The model takes images; ``vision = false`` sends each as a note saying what it was."""

    def prompt_mode(self) -> PromptMode:
        """``compact`` where chosen, or where the context window is small."""
        if self.prompt is not None:
            return self.prompt
        small = self.context_window is not None and self.context_window <= COMPACT_BELOW
        return "compact" if small else "full"


class _Bad(ValueError):
    """A value its key cannot hold; the message says what it must be (``must be ...``)."""


Reader = Callable[[Any], Any]
"""Checks the value of one single-valued key and gives what :class:`Config` holds for it."""


def _checked(value: Any, minimum: float, *, whole: bool) -> float:
    numeric = isinstance(value, int) or (isinstance(value, float) and not whole)
    if isinstance(value, bool) or not numeric or value < minimum:
        kind = "an integer" if whole else "a number"
        raise _Bad(f"must be {kind} of at least {minimum:g}, got {value!r}")
    return float(value)


def _whole(minimum: int) -> Reader:
    return lambda value: int(_checked(value, minimum, whole=True))


def _real(minimum: float) -> Reader:
    return lambda value: _checked(value, minimum, whole=False)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad("must be true or false")
    return value


def _one_of(choices: Iterable[str], make: Callable[[str], Any] = str) -> Reader:
    """A reader of one of ``choices``, given as ``make(choice)``."""
    names = tuple(choices)

    def read(value: Any) -> Any:
        if not isinstance(value, str) or value not in names:
            raise _Bad(f"must be one of {', '.join(names)}")
        return make(value)

    return read


def _environment(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad(f"must be one of {CHOICES}")
    try:
        return str(parse_environment(value))
    except ValueError:
        raise _Bad(f"must be one of {CHOICES}") from None


def _container_cli(value: Any) -> str:
    """``auto`` or a container CLI's name (the container code loads only if a file says)."""
    from .environments import CLIS

    return str(_one_of(("auto", *CLIS))(value))


def _model(value: Any) -> str:
    if not (isinstance(value, str) and value):
        raise _Bad('must be a string such as "openai/gpt-4o"')
    return value


def _tool_names(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise _Bad("must be a list of tool names")
    return tuple(t.strip() for t in value if t.strip()) if value else None


def _names(what: str) -> Reader:
    """A reader of a list of non-empty names (``what`` they are, for the message)."""
    def read(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise _Bad(f"must be a list of {what}")
        return tuple(value)

    return read


def _read(reader: Reader) -> dict[str, Reader]:
    """The metadata of a :class:`Config` field the file's top level sets under the field's
    own name: its reader, declared beside its default."""
    return {"read": reader}


def _from(*keys: str) -> dict[str, tuple[str, ...]]:
    """The metadata of a :class:`Config` field the file sets from other keys (a table of
    another name, or several keys), or from none (the home, the file's path)."""
    return {"keys": keys}


VARIABLES = "environment variable names"
LIMIT_KEYS = ("budget_usd", "budget_tokens", "time_limit")
"""The top-level keys of :attr:`Config.limits` (also those of a ``[models.NAME]`` table)."""


@dataclass(frozen=True, slots=True)
class Config:
    """The configuration file, read (see :func:`load_config`). Each single-valued key is a
    field of the same name that declares its default and its reader (:func:`_read`); a
    table or a group of keys says its keys (:func:`_from`). :data:`TOP_LEVEL`, the file's
    known keys, is read from these fields."""

    model: str | None = field(default=None, metadata=_read(_model))
    format: CallFormat = field(default=MARKDOWN,
                               metadata=_read(_one_of(FORMATS, FORMATS.__getitem__)))
    tools: tuple[str, ...] | None = field(default=None, metadata=_read(_tool_names))
    max_steps: int = field(default=MAX_STEPS, metadata=_read(_whole(1)))
    max_tokens: int = field(default=MAX_TOKENS, metadata=_read(_whole(1)))
    request_timeout: float = field(default=REQUEST_TIMEOUT, metadata=_read(_real(0.001)))
    """Seconds to wait for the model's server (once called ``timeout``)."""
    retries: int = field(default=RETRIES, metadata=_read(_whole(0)))
    home: Path = field(default_factory=lambda: Path.home() / ".local/share/fencecall",
                      metadata=_from())
    """From ``FENCECALL_HOME``, never the file: it holds what decides the next run."""
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    sandbox: SandboxPolicy = field(
        default=SandboxPolicy.WORKSPACE_WRITE,
        metadata=_read(_one_of((p.value for p in SandboxPolicy), SandboxPolicy)))
    network: bool = field(default=False, metadata=_read(_flag))
    environment: str = field(default="sandbox", metadata=_read(_environment))
    """Where the tools run: the host, the sandbox, or a container of an image."""
    container_cli: str = field(default="auto", metadata=_read(_container_cli))
    """The container CLI (auto: the first of podman and docker that answers)."""
    pass_env: tuple[str, ...] = field(default=(), metadata=_read(_names(VARIABLES)))
    secrets: tuple[str, ...] = field(default=(), metadata=_read(_names(VARIABLES)))
    telemetry: bool = field(default=False, metadata=_read(_flag))
    telemetry_content: bool = field(default=False, metadata=_read(_flag))
    tool_packages: tuple[str, ...] = field(default=(), metadata=_read(_names("package names")))
    mcp_servers: tuple[McpServerConfig, ...] = field(default=(), metadata=_from("mcp"))
    models: Mapping[str, ModelSettings] = field(default_factory=dict)
    feedback_limit: int = field(default=FEEDBACK_LIMIT, metadata=_read(_whole(0)))
    """Replies in a row that ran nothing despite feedback before the agent gives up (once
    called ``near_misses``)."""
    autonomous: bool = field(default=False, metadata=_read(_flag))
    """Runs nobody watches (a one-shot prompt, a batch task) end done only when the model
    calls the complete tool; an interactive chat never does."""
    limits: Limits = field(default_factory=Limits, metadata=_from(*LIMIT_KEYS))
    """``budget_usd``, ``budget_tokens`` and ``time_limit`` of every run."""
    compaction: Compaction = field(default=COMPACTION,
                                    metadata=_read(_one_of(get_args(Compaction))))
    result_share: float = field(default=RESULT_SHARE, metadata=_read(_real(0.01)))
    """A tool result above this share of the context window is saved to a file; the model
    gets its start and end and the path to read the rest."""
    background_after: float = field(default=BACKGROUND_AFTER, metadata=_read(_real(0)))
    """Seconds a shell command runs before it goes on as a background job (0: never)."""
    max_jobs: int = field(default=MAX_JOBS, metadata=_read(_whole(1)))
    """Background jobs that may run at once in one conversation."""
    resources: ResourceLimits = field(default_factory=ResourceLimits)
    """What each process a tool starts may take (the ``[resources]`` table)."""
    hooks: tuple[UserHook, ...] = field(default_factory=tuple)
    """The user's commands run at a session's events (``[[hooks]]``): from this file only,
    never from anything the model may write."""
    permissions: PermissionRules = field(default_factory=PermissionRules)
    """Calls that run without asking and calls refused (the ``[permissions]`` table)."""
    path: Path | None = field(default=None, metadata=_from())
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
    home = real_path(config.home.expanduser())
    file = real_path(config.path.expanduser()) if config.path is not None else None
    for what, folder in folders:
        real = real_path(folder.expanduser())
        if inside(home, real):
            raise ConfigError(f"the fencecall home folder {home} is inside {what} {real}, "
                              "where the model may write: set FENCECALL_HOME to a folder "
                              "outside it, or choose another workspace or --root folder")
        if inside(real, home):
            raise ConfigError(f"{what} {real} is inside the fencecall home folder {home}, "
                              "where the model must not write: choose a folder outside it, "
                              "or set FENCECALL_HOME elsewhere")
        if file is not None and inside(file, real):
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


def _file_keys(item: Field[Any]) -> tuple[str, ...]:
    """The top-level keys the field ``item`` of :class:`Config` is read from."""
    keys: tuple[str, ...] = item.metadata.get("keys", (item.name,))
    return keys


TOP_LEVEL = frozenset(key for item in fields(Config) for key in _file_keys(item))
"""The keys the file's top level may hold; any other is an error, never silently ignored."""
READERS: Mapping[str, Reader] = MappingProxyType(
    {item.name: item.metadata["read"] for item in fields(Config) if "read" in item.metadata})
"""The single-valued top-level keys, each with the reader its field declares."""
RENAMED: Mapping[str, str] = MappingProxyType({"timeout": "request_timeout",
                                               "near_misses": "feedback_limit"})
"""Old key to new: a file written before a rename still loads (both at once: an error)."""
PROVIDER_KEYS = frozenset({"kind", "base_url", "api_key_env"})
MODEL_KEYS = frozenset({"temperature", "top_p", "stop", "max_tokens", "context_window",
                        "prompt", "price", "vision", *LIMIT_KEYS})
PRICE_KEYS = frozenset({"input", "output", "cache_read", "cache_write"})


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """The configuration: built-in defaults, then the file (and the providers' addresses, the
    home from the environment)."""
    env = os.environ if env is None else env
    path = config_path(env)
    data = _read_file(path, "FENCECALL_CONFIG" in env)
    _known_keys(new_names(data, RENAMED, "", lambda text: ConfigError(f"{path}: {text}")),
                TOP_LEVEL, "", path)
    home = env.get("FENCECALL_HOME")
    return Config(
        **read_settings(data, str(path)),
        home=Path(home).expanduser() if home else Config().home,
        providers=_providers(data, path, env),
        mcp_servers=_mcp_servers(data, path, env),
        models=_models(data, path),
        limits=read_limits(data, "", str(path)),
        resources=_resources(data, path),
        hooks=_hooks(data, path),
        permissions=_permissions(data, path),
        path=path,
    )


def read_settings(given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The single-valued settings ``given`` holds (a file's top level, or the keywords of
    :func:`fencecall.assembly.agent_from_config`), checked and converted by their readers,
    by field name; an old name (:data:`RENAMED`) counts as its new one. Other keys are left
    to the caller. ``where`` (the file) begins an error's message."""
    data = new_names(given, RENAMED, "", lambda text: ConfigError(f"{where}: {text}"))
    found = {}
    for key, read in READERS.items():
        if key not in data:
            continue
        try:
            found[key] = read(data[key])
        except _Bad as err:
            said = next((old for old, new in RENAMED.items() if new == key and old in given),
                        key)
            raise ConfigError(f"{where}: {said} {err}") from None
    return found


def _providers(data: Mapping[str, Any], path: Path,
               env: Mapping[str, str]) -> dict[str, ProviderConfig]:
    """The built-in providers (their addresses from ``env``), and the file's tables."""
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
    return providers


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


def _hooks(data: Mapping[str, Any], path: Path) -> tuple[UserHook, ...]:
    """The ``[[hooks]]`` entries (see :mod:`fencecall.tools.user_hooks`)."""
    try:
        return read_hooks(data.get("hooks", []))
    except HookDeclarationError as err:
        raise ConfigError(f"{path}: {err}") from None


def _permissions(data: Mapping[str, Any], path: Path) -> PermissionRules:
    """The ``[permissions]`` table: ``allow`` and ``deny``, lists of rules, each checked."""
    table = data.get("permissions", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: permissions must be a table ([permissions])")
    _known_keys(table, ("allow", "deny"), "permissions", path)
    found: dict[str, tuple[Any, ...]] = {}
    for key in ("allow", "deny"):
        given = table.get(key, [])
        if not isinstance(given, list) or not all(isinstance(rule, str) for rule in given):
            raise ConfigError(f"{path}: permissions.{key} must be a list of rules such as "
                              '"shell(git status *)"')
        try:
            found[key] = tuple(parse_rule(rule) for rule in given)
        except RuleError as err:
            raise ConfigError(f"{path}: permissions.{key}: {err}") from None
    return PermissionRules(found["allow"], found["deny"])


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
        vision = table.get("vision", True)
        if not isinstance(vision, bool):
            raise ConfigError(f"{path}: {where}.vision must be true or false")
        found[name] = ModelSettings(
            Sampling(number.get("temperature"), number.get("top_p"), tuple(stop)),
            whole.get("max_tokens"), whole.get("context_window"), prompt,
            read_limits(table, f"{where}.", path), _price(table, where, path), vision)
    return found


def read_limits(table: Mapping[str, Any], where: str, path: Path | str) -> Limits:
    """``budget_usd``, ``budget_tokens`` and ``time_limit`` of ``table`` (None where unset):
    of the file's top level or a model's table (``where``: its prefix, ``models.NAME.``), or
    of :func:`~fencecall.assembly.agent_from_config`'s keywords."""
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
    from .accounting import Price

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
    if not servers:
        return ()
    from .tools.mcp import DeclarationError, from_table

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


def _number(data: Mapping[str, Any], key: str, default: float, path: Path | str, *,
            minimum: float, whole: bool = True, name: str | None = None) -> float:
    try:
        return _checked(data.get(key, default), minimum, whole=whole)
    except _Bad as err:
        raise ConfigError(f"{path}: {name or key} {err}") from None
