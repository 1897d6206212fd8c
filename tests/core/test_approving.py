"""Who must approve what, and when an approval passes at once (behaviour.md, "Approvals and
policies"), over the whole enums: every kind of request (a change set, or each deployment
kind), every requester (a push, or each role), both values of each policy.

The rules, in the spec's order: ``rollbacks_skip_approval`` passes a rollback; a requester
who is an admin or owner passes their own request when ``forbid_self_approval`` is off; so
does ``skip_production_approval`` on every service the request deploys, when self-approval
is not forbidden. Otherwise it waits, saying so; when the requester is the only one who could
decide and may not, it says that no one else can approve it.
"""

from __future__ import annotations

import itertools

import pytest

from reconciler.core import approving
from reconciler.core.approving import Outcome, Policies
from reconciler.core.rights import Principal, Where
from reconciler.core.states import ApprovalRule, DeploymentKind, Role
from reconciler.errors import ForbiddenError

R = ApprovalRule
KINDS: list[DeploymentKind | None] = [None, *DeploymentKind]  # None: a change set
REQUESTERS: list[Role | None] = [None, *Role]  # None: a push, asked by the project
DECIDERS = (Role.OWNER, Role.ADMIN)
SKIPS = [(), (False,), (True,), (True, True), (True, False)]  # one flag per service deployed
BOOLS = (False, True)

WAITING = "Waiting for approval"
ONLY_ADMIN = (
    "Waiting for approval, but no one else in this organization can approve it: your policy "
    "forbids approving your own deploys and you are its only admin."
)
PASSED = ""  # what a request that passed at once shows: nothing to wait for

NAMES = {
    None: "project:shop",
    Role.OWNER: "olga",
    Role.ADMIN: "ada",
    Role.MEMBER: "bob",
    Role.VIEWER: "vera",
}


def evaluate(
    kind: DeploymentKind | None,
    role: Role | None,
    *,
    forbid_self_approval: bool = True,
    rollbacks_skip_approval: bool = False,
    skips: tuple[bool, ...] = (),
    deciders: tuple[str, ...] = ("olga", "ada", "carol"),
) -> Outcome:
    decides = role is not None and role.can_decide  # holds the approve grant there
    request = approving.Request(kind, NAMES[role], decides, skips, deciders)
    return approving.evaluate(request, Policies(forbid_self_approval, rollbacks_skip_approval))


def test_the_policies_default_to_the_spec_s() -> None:
    assert Policies() == Policies(forbid_self_approval=True, rollbacks_skip_approval=False)


# -- rollbacks_skip_approval -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "forbid", "skips"), list(itertools.product(REQUESTERS, BOOLS, SKIPS))
)
def test_rollbacks_skip_approval_passes_every_rollback(
    role: Role | None, forbid: bool, skips: tuple[bool, ...]
) -> None:
    outcome = evaluate(
        DeploymentKind.ROLLBACK,
        role,
        forbid_self_approval=forbid,
        rollbacks_skip_approval=True,
        skips=skips,
    )
    assert outcome == Outcome(R.ROLLBACKS_SKIP_APPROVAL, PASSED)


@pytest.mark.parametrize(
    ("kind", "role"),
    [(k, r) for k in KINDS for r in REQUESTERS if k is not DeploymentKind.ROLLBACK],
)
def test_rollbacks_skip_approval_passes_nothing_but_rollbacks(
    kind: DeploymentKind | None, role: Role | None
) -> None:
    assert evaluate(kind, role, rollbacks_skip_approval=True).rule is None


@pytest.mark.parametrize("role", REQUESTERS)
def test_without_the_policy_a_rollback_waits_like_any_request(role: Role | None) -> None:
    assert evaluate(DeploymentKind.ROLLBACK, role) == Outcome(None, WAITING)


# -- requester-can-decide ----------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "role", "skips"), list(itertools.product(KINDS, DECIDERS, SKIPS)))
def test_an_admin_or_owner_passes_their_own_request_when_self_approval_is_allowed(
    kind: DeploymentKind | None, role: Role, skips: tuple[bool, ...]
) -> None:
    outcome = evaluate(kind, role, forbid_self_approval=False, skips=skips)
    assert outcome == Outcome(R.REQUESTER_CAN_DECIDE, PASSED)


@pytest.mark.parametrize(("kind", "role", "skips"), list(itertools.product(KINDS, DECIDERS, SKIPS)))
def test_an_admin_or_owner_waits_for_someone_else_when_self_approval_is_forbidden(
    kind: DeploymentKind | None, role: Role, skips: tuple[bool, ...]
) -> None:
    assert evaluate(kind, role, forbid_self_approval=True, skips=skips) == Outcome(None, WAITING)


@pytest.mark.parametrize(("kind", "role"), list(itertools.product(KINDS, [None, Role.MEMBER])))
def test_a_member_or_a_push_never_decides_its_own_request(
    kind: DeploymentKind | None, role: Role | None
) -> None:
    assert evaluate(kind, role, forbid_self_approval=False) == Outcome(None, WAITING)


# -- skip_production_approval ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("skips", "rule"),
    [
        ((True,), R.SKIP_PRODUCTION_APPROVAL),
        ((True, True), R.SKIP_PRODUCTION_APPROVAL),
        ((True, False), None),  # a change set passes only when every service has it
        ((False, True), None),
        ((False,), None),
        ((), None),  # nothing to deploy, nothing that skips
    ],
)
@pytest.mark.parametrize(("kind", "role"), list(itertools.product(KINDS, [None, Role.MEMBER])))
def test_skip_production_approval_passes_when_every_service_deployed_has_it(
    kind: DeploymentKind | None,
    role: Role | None,
    skips: tuple[bool, ...],
    rule: ApprovalRule | None,
) -> None:
    outcome = evaluate(kind, role, forbid_self_approval=False, skips=skips)
    assert outcome == Outcome(rule, PASSED if rule else WAITING)


@pytest.mark.parametrize(("kind", "role"), list(itertools.product(KINDS, REQUESTERS)))
def test_skip_production_approval_does_not_pass_when_self_approval_is_forbidden(
    kind: DeploymentKind | None, role: Role | None
) -> None:
    assert evaluate(kind, role, forbid_self_approval=True, skips=(True, True)).rule is None


# -- the first rule that holds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "role", "rollbacks_skip_approval", "rule"),
    [
        (DeploymentKind.ROLLBACK, Role.ADMIN, True, R.ROLLBACKS_SKIP_APPROVAL),
        (DeploymentKind.ROLLBACK, Role.MEMBER, True, R.ROLLBACKS_SKIP_APPROVAL),
        (DeploymentKind.ROLLBACK, Role.ADMIN, False, R.REQUESTER_CAN_DECIDE),
        (DeploymentKind.DEPLOY, Role.OWNER, True, R.REQUESTER_CAN_DECIDE),
        (None, Role.ADMIN, True, R.REQUESTER_CAN_DECIDE),
        (DeploymentKind.ROLLBACK, Role.MEMBER, False, R.SKIP_PRODUCTION_APPROVAL),
        (None, None, True, R.SKIP_PRODUCTION_APPROVAL),
    ],
)
def test_when_several_rules_hold_the_spec_s_order_names_the_rule(
    kind: DeploymentKind | None,
    role: Role | None,
    rollbacks_skip_approval: bool,
    rule: ApprovalRule,
) -> None:
    outcome = evaluate(
        kind,
        role,
        forbid_self_approval=False,
        rollbacks_skip_approval=rollbacks_skip_approval,
        skips=(True,),
    )
    assert outcome == Outcome(rule, PASSED)


# -- what a waiting request says ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "deciders", "message"),
    [
        (Role.ADMIN, ("ada",), ONLY_ADMIN),
        (Role.OWNER, ("olga",), ONLY_ADMIN),
        (Role.ADMIN, ("ada", "olga"), WAITING),
        (Role.OWNER, ("olga", "carol"), WAITING),
        (Role.MEMBER, ("ada",), WAITING),  # bob cannot decide; ada can
        (None, ("ada",), WAITING),  # a push: the project asked, ada can decide
    ],
    ids=["only-admin", "only-owner", "another-owner", "another-admin", "member", "push"],
)
@pytest.mark.parametrize("kind", KINDS)
def test_a_waiting_request_says_whether_anyone_else_can_approve_it(
    kind: DeploymentKind | None, role: Role | None, deciders: tuple[str, ...], message: str
) -> None:
    assert evaluate(kind, role, deciders=deciders) == Outcome(None, message)


@pytest.mark.parametrize("role", DECIDERS)
def test_the_only_admin_passes_their_own_request_once_self_approval_is_allowed(
    role: Role,
) -> None:
    outcome = evaluate(DeploymentKind.DEPLOY, role, forbid_self_approval=False, deciders=("ada",))
    assert outcome == Outcome(R.REQUESTER_CAN_DECIDE, PASSED)


# -- who may decide ------------------------------------------------------------------------------

PRODUCTION = Where("shop", "production", protected=True)
NOT_YOUR_OWN = (
    "Your policy forbids approving your own deploys: someone else must approve this request."
)


@pytest.mark.parametrize(("role", "forbid", "own"), list(itertools.product(Role, BOOLS, BOOLS)))
def test_check_decider_refuses_who_may_not_decide(role: Role, forbid: bool, own: bool) -> None:
    """Without the approve grant there, then (with the policy) their own request."""
    refusal = None
    if not role.can_decide:
        refusal = (
            "zed may not approve in shop/production: needs the approve grant or the admin role"
        )
        refusal += " (zed is a viewer)" if role is Role.VIEWER else ""
    elif forbid and own:
        refusal = NOT_YOUR_OWN
    requester = "zed" if own else "project:shop"
    policies = Policies(forbid_self_approval=forbid)
    zed = Principal("zed", role)
    if refusal is None:
        approving.check_decider(zed, requester, policies, PRODUCTION, approve=True)
        return
    with pytest.raises(ForbiddenError) as refused:
        approving.check_decider(zed, requester, policies, PRODUCTION, approve=True)
    assert str(refused.value) == refusal
