"""A Compose service's environment as nebula.toml variables.

In order, for each value:
1. a connection string, address or credential of a Compose service that became a database is
   rewritten as references to that database (``${{ db.DATABASE_URL }}``, ``${{ cache.REDIS_HOST
   }}``, ``${{ db.PGPASSWORD }}`` ...): Nebula generates the credentials, and a reference also
   orders the deploys;
2. a URL to another service at the port it listens on becomes ``${{ host(svc) }}``;
3. a value only the shell knows (``${VAR}`` with no default, or a name with no value) or one
   that looks secret (PASSWORD, SECRET, TOKEN, KEY ... in its name, a password in a URL)
   becomes ``${{ secret.NAME }}``: its value is never copied into the file nor printed;
4. anything else is kept, with Compose's ``${VAR:-default}`` filled in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reconciler.importing import interpolation
from reconciler.importing.notes import Notes
from reconciler.importing.yamltree import At
from reconciler.model.engines import DatabaseEngine

SECRET_WORDS = frozenset(
    {"PASSWORD", "PASSWD", "PASS", "PWD", "SECRET", "SECRETS", "TOKEN", "KEY", "APIKEY",
     "CREDENTIAL", "CREDENTIALS", "PRIVATE", "SALT", "DSN", "PASSPHRASE"}
)  # fmt: skip
NOT_SECRET_ENDINGS = frozenset({"FILE", "PATH", "DIR"})  # names where a secret is kept
_URL = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:(?P<userinfo>[^@/?#]*)@)?"
    r"(?P<host>[A-Za-z0-9_.-]+)(?::(?P<port>[0-9]+))?(?P<rest>[/?#].*)?$",
    re.DOTALL,
)
_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+):(?P<port>[0-9]+)$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Database:
    """A Compose service that became a database, and how the others reached it."""

    slug: str
    engine: DatabaseEngine
    hosts: frozenset[str]  # its service name, hostname, container_name, network aliases
    user: str | None = None  # credentials as written in its Compose environment
    password: str | None = None
    database: str | None = None


@dataclass(frozen=True)
class Peer:
    """Another Compose service that became a service: its address and its port."""

    slug: str
    hosts: frozenset[str]
    port: int | None


@dataclass(frozen=True)
class Variable:
    key: str
    value: str | None  # None: given with no value (Compose passes the shell's through)
    at: At
    where: str  # e.g. services.web.environment, for the notes
    path: str | None = None  # an env_file's path; None for the Compose file itself


@dataclass
class SecretBook:
    """The secrets an import asks for: one name per distinct value, across services."""

    project: str
    environments: tuple[str, ...]
    values: dict[str, str | None] = field(default_factory=dict)  # name -> value (never shown)

    def name_for(self, key: str, value: str | None, service: str) -> str:
        """The name of the secret holding ``value``: one asked for already if it holds the
        same value (as in Compose, the two stay equal), else ``key`` if free."""
        if value is not None:
            same = next((n for n, v in self.values.items() if v == value), None)
            if same is not None:
                return same
        if key not in self.values or self.values[key] == value:
            self.values[key] = value
            return key
        name = f"{service.upper().replace('-', '_')}_{key}"
        self.values.setdefault(name, value)
        return name

    def how_to_set(self, name: str) -> str:
        first, *rest = self.environments
        more = f" (and {', '.join(rest)})" if rest else ""
        return f"set it with: nebula secret set {self.project} {first} {name}{more}"


@dataclass
class Context:
    databases: dict[str, Database]  # by every host name that reaches one
    peers: dict[str, Peer]
    secrets: SecretBook
    notes: Notes


def variables(context: Context, service: str, given: list[Variable]) -> dict[str, str]:
    """``service``: its slug (names a secret apart from another service's of the same name)."""
    preferred = _referenced(context, given)
    out: dict[str, str] = {}
    for var in given:
        value = _value(context, service, var, preferred)
        if value is not None:
            out[var.key] = value
    return out


def _referenced(context: Context, given: list[Variable]) -> dict[DatabaseEngine, Database]:
    """Per engine, the one database the service reaches by address: whose credentials its
    other values mean."""
    found: dict[DatabaseEngine, set[str]] = {}
    for var in given:
        text = interpolation.expand(var.value or "").text
        match = _URL.match(text) or _HOST_PORT.match(text)
        host = match.group("host") if match else text
        if (db := context.databases.get(host)) is not None:
            found.setdefault(db.engine, set()).add(db.slug)
    slugs = {db.slug: db for db in context.databases.values()}
    return {engine: slugs[next(iter(s))] for engine, s in found.items() if len(s) == 1}


def _value(
    context: Context, service: str, var: Variable, preferred: dict[DatabaseEngine, Database]
) -> str | None:
    where = f"{var.where}.{var.key}" if var.where else var.key
    if var.value is None:
        return _secret(context, service, var, f"{where} has no value (Compose passes "
                       "the shell's through)")  # fmt: skip
    expanded = interpolation.expand(var.value)
    for text in dict.fromkeys((var.value, expanded.text)):
        rewritten = _database_value(context, var.key, text, preferred)
        if rewritten is not None:
            return rewritten
    if not expanded.known:
        names = ", ".join(f"${{{n}}}" for n in expanded.unknown)
        return _secret(context, service, var, f"{where} takes {names} from the shell "
                       "or .env when Compose runs")  # fmt: skip
    text = expanded.text
    url = _URL.match(text)
    if url and ":" in (url.group("userinfo") or ""):
        return _secret(context, service, var, f"{where} holds a URL with a password")
    if looks_secret(var.key) and text:
        return _secret(context, service, var, f"{where} looks like a secret")
    return _peer_url(context, text) or text.replace("${{", "$${{")


def looks_secret(key: str) -> bool:
    words = [w for w in re.split(r"[_.\-]+", key.upper()) if w]
    if not words or words[-1] in NOT_SECRET_ENDINGS:
        return False
    return any(
        w in SECRET_WORDS or w.endswith(("PASSWORD", "SECRET", "TOKEN", "APIKEY")) for w in words
    )


def _secret(context: Context, service: str, var: Variable, what: str) -> str:
    name = context.secrets.name_for(var.key, var.value, service)
    context.notes.note(
        var.at,
        f"{what}: written as ${{{{ secret.{name} }}}}, its value not copied",
        context.secrets.how_to_set(name),
        path=var.path,
    )
    return f"${{{{ secret.{name} }}}}"


def _database_value(
    context: Context, key: str, text: str, preferred: dict[DatabaseEngine, Database]
) -> str | None:
    if (url := _URL.match(text)) and url.group("host") in context.databases:
        return _database_url(context.databases[url.group("host")], url)
    if (pair := _HOST_PORT.match(text)) and pair.group("host") in context.databases:
        db = context.databases[pair.group("host")]
        prefix = "PG" if db.engine is DatabaseEngine.POSTGRES else "REDIS_"
        return f"${{{{ {db.slug}.{prefix}HOST }}}}:${{{{ {db.slug}.{prefix}PORT }}}}"
    if text in context.databases:
        db = context.databases[text]
        name = "PGHOST" if db.engine is DatabaseEngine.POSTGRES else "REDIS_HOST"
        return f"${{{{ {db.slug}.{name} }}}}"
    return _credential(context, key, text, preferred)


def _database_url(db: Database, url: re.Match[str]) -> str:
    scheme, rest = url.group("scheme"), url.group("rest") or ""
    path, _, query = rest.partition("?")
    if db.engine is DatabaseEngine.REDIS:
        index = path.strip("/") or "0"
        if index == "0" and not query and scheme == "redis":
            return f"${{{{ {db.slug}.REDIS_URL }}}}"
        return (
            f"{scheme}://:${{{{ {db.slug}.REDIS_PASSWORD }}}}@${{{{ {db.slug}.REDIS_HOST }}}}:"
            f"${{{{ {db.slug}.REDIS_PORT }}}}/{index}" + (f"?{query}" if query else "")
        )
    if scheme in ("postgres", "postgresql") and not query:
        return f"${{{{ {db.slug}.DATABASE_URL }}}}"
    return (
        f"{scheme}://${{{{ {db.slug}.PGUSER }}}}:${{{{ {db.slug}.PGPASSWORD }}}}@"
        f"${{{{ {db.slug}.PGHOST }}}}:${{{{ {db.slug}.PGPORT }}}}/${{{{ {db.slug}.PGDATABASE }}}}"
        + (f"?{query}" if query else "")
    )


def _credential(
    context: Context, key: str, text: str, preferred: dict[DatabaseEngine, Database]
) -> str | None:
    """A user, password, database name or port that is the one a database was given."""
    words = set(re.split(r"[_.\-]+", key.upper()))
    every = list({d.slug: d for d in context.databases.values()}.values())
    for engine in DatabaseEngine:
        mine = (
            [preferred[engine]] if engine in preferred else [d for d in every if d.engine is engine]
        )
        for db in mine:
            if (found := _credential_of(db, words, key, text, alone=len(mine) == 1)) is not None:
                return f"${{{{ {db.slug}.{found} }}}}"
    return None


def _credential_of(
    db: Database, words: set[str], key: str, text: str, *, alone: bool
) -> str | None:
    postgres = db.engine is DatabaseEngine.POSTGRES
    if db.password is not None and text == db.password and looks_secret(key):
        return "PGPASSWORD" if postgres else "REDIS_PASSWORD"
    if not postgres:
        return "REDIS_PORT" if alone and words & {"PORT"} and text == str(db.engine.port) else None
    if words & {"USER", "USERNAME", "PGUSER"} and text == (db.user or "postgres"):
        return "PGUSER"
    named = words & {"DB", "DATABASE", "DBNAME", "PGDATABASE", "NAME"}
    if named and _is_db_word(words) and text == (db.database or db.user or "postgres"):
        return "PGDATABASE"
    if alone and words & {"PORT", "PGPORT"} and text == str(db.engine.port):
        return "PGPORT"
    return None


def _is_db_word(words: set[str]) -> bool:
    return bool(words & {"DB", "DATABASE", "DBNAME", "PGDATABASE", "POSTGRES", "PG"})


def _peer_url(context: Context, text: str) -> str | None:
    url = _URL.match(text)
    if url is None or url.group("host") not in context.peers:
        return None
    peer = context.peers[url.group("host")]
    port = int(url.group("port")) if url.group("port") else _DEFAULT_PORTS.get(url.group("scheme"))
    if peer.port is None or port != peer.port:
        return None
    user = f"{url.group('userinfo')}@" if url.group("userinfo") is not None else ""
    return f"{url.group('scheme')}://{user}${{{{ host({peer.slug}) }}}}{url.group('rest') or ''}"
