"""Who may do what: roles and grants, decided in one place for every path (the CLI, local or
remote, the HTTP API and Slack's buttons).

Pure: the caller loads a ``Principal`` (the member acting, with their role and grants as
they stand at this request) and asks before it acts; a refusal is a ``ForbiddenError``
whose message names what was missing (behaviour.md "People, roles and grants"):
``bob may not approve in shop/production: needs the approve grant or the admin role``.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.core.states import GrantKind, Role
from reconciler.errors import ConflictError, ForbiddenError

LOCAL_ADMIN_NAME = "local-admin"
PROJECT_REQUESTER = "project:"  # requester/owner prefix when the project (a push) asks


def project_actor(slug: str) -> str:
    return f"{PROJECT_REQUESTER}{slug}"


def shown_actor(name: str | None) -> str | None:
    """As users read it: the project's slug when a push asked (the project is the requester);
    stored with a prefix no member name can take, so it is never taken for a person."""
    if name is not None and name.startswith(PROJECT_REQUESTER):
        return name[len(PROJECT_REQUESTER) :]
    return name


@dataclass(frozen=True)
class Grant:
    kind: GrantKind
    project: str
    environment: str | None = None  # None: every environment of the project

    def covers(self, kind: GrantKind, where: Where) -> bool:
        return (
            self.kind is kind
            and self.project == where.project
            and self.environment in (None, where.environment)
        )

    @property
    def scope(self) -> str:
        return self.project if self.environment is None else f"{self.project}/{self.environment}"


@dataclass(frozen=True)
class Where:
    """An environment something is done in."""

    project: str
    environment: str
    protected: bool

    def __str__(self) -> str:
        return f"{self.project}/{self.environment}"


@dataclass(frozen=True)
class Principal:
    """Who acts: a member as they stand now (a demoted member's token loses the rights at
    once, since each request loads this afresh), or the operator of the store."""

    name: str
    role: Role
    grants: tuple[Grant, ...] = ()
    token: int | None = None  # the API token it came with
    local: bool = False  # local mode: someone with the store itself (``--as``, or local-admin)

    @property
    def described(self) -> str:
        """How a refusal of ``--as`` names who acts instead: ``bob (token 4)``."""
        return f"{self.name} (token {self.token})" if self.token is not None else self.name


# The operator of the store (local mode without ``--as``): whoever can open the database can
# do anything anyway, so it holds every right, and its acts are recorded under this name.
LOCAL_ADMIN = Principal(LOCAL_ADMIN_NAME, Role.OWNER, local=True)


def _a(role: Role) -> str:
    return f"{'an' if role.value[0] in 'aeiou' else 'a'} {role.value}"


def holds(principal: Principal, kind: GrantKind, where: Where) -> bool:
    # Owners and admins hold both grants everywhere.
    if principal.role.can_decide:
        return True
    # A viewer holds nothing, whatever was granted.
    if not principal.role.acts:
        return False
    # A member deploys in unprotected environments by default.
    if kind is GrantKind.DEPLOY and not where.protected:
        return True
    return any(grant.covers(kind, where) for grant in principal.grants)


def require(principal: Principal, kind: GrantKind, where: Where, verb: str | None = None) -> None:
    """``verb``: what the refusal says was asked (``reject``), when not the grant's name."""
    if holds(principal, kind, where):
        return
    viewer = f" ({principal.name} is a viewer)" if not principal.role.acts else ""
    raise ForbiddenError(
        f"{principal.name} may not {verb or kind.value} in {where}: needs the {kind.value} "
        f"grant or the admin role{viewer}",
        hint=f"an admin can grant it: nebula grant add {principal.name} {kind.value} "
        f"--project {where.project} --env {where.environment}",
    )


def require_admin(principal: Principal, what: str) -> None:
    """Administration (members, tokens of others, policies, freezes, secrets, projects,
    service settings, suspensions, grants) takes an admin or an owner."""
    if not principal.role.can_decide:
        raise ForbiddenError(
            f"{principal.name} may not {what}: needs the admin role "
            f"({principal.name} is {_a(principal.role)})"
        )


def require_acting(principal: Principal, what: str) -> None:
    """Anything but reading takes a role that acts (a viewer acts on nothing)."""
    if not principal.role.acts:
        raise ForbiddenError(
            f"{principal.name} may not {what}: needs the member role or above "
            f"({principal.name} is a viewer)"
        )


def require_owner(principal: Principal, what: str) -> None:
    if principal.role is not Role.OWNER:
        raise ForbiddenError(
            f"{principal.name} may not {what}: needs the owner role "
            f"({principal.name} is {_a(principal.role)})"
        )


def check_role_change(
    principal: Principal, member: str, old: Role | None, new: Role | None, owners: int
) -> None:
    """May ``principal`` give ``member`` (now ``old``, None: not yet a member) the role ``new``
    (None: remove them)? ``owners``: how many owners there are now.

    Changing who is an owner takes an owner; the last owner can be neither demoted nor
    removed, so an organization always has someone who can change everything."""
    if new is None:
        what = f"remove {member}"
    elif old is None:
        what = f"add {member} as {new.value}"
    else:
        what = f"change the role of {member}"
    require_admin(principal, what)
    # An owner's standing (and who they are: their Slack id, e-mail) is an owner's business.
    if old is Role.OWNER:
        require_owner(principal, f"{what}, an owner")
    elif new is Role.OWNER:
        require_owner(principal, f"make {member} an owner")
    if old is Role.OWNER and new is not Role.OWNER and owners <= 1:
        doing = "removed" if new is None else "demoted"
        raise ConflictError(
            f"{member} is the last owner and cannot be {doing}: an organization always keeps "
            "one owner",
            hint="make someone else an owner first: nebula member set NAME --role owner",
        )


def check_own_or_admin(
    principal: Principal, owner: str, what: str, owner_role: Role | None = None
) -> None:
    """A member manages their own tokens; another member's take an admin, and an owner's an
    owner (``owner_role``: an admin who revoked them could lock the owners out)."""
    if owner == principal.name:
        return
    require_admin(principal, f"{what} of {owner}")
    if owner_role is Role.OWNER:
        require_owner(principal, f"{what} of {owner}, an owner")
