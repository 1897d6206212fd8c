"""``POST /slack/interactions``: Approve and Reject clicked in Slack.

The order matters: the signature is checked on the raw body before anything is parsed (401
and nothing changes otherwise); then the Slack user is mapped to a member, and the decision
goes through the same ``decide`` as the CLI and the API, so the same rules refuse the same
things. Slack wants an answer within 3 seconds: the decision is one short transaction, and
what talks to Slack afterwards (the ephemeral reply, the message update) runs once the
answer has been sent. Should the store be slow to take the decision, the click is
acknowledged after ``ACK_WITHIN`` anyway and the decision's outcome follows the same way.
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, BackgroundTasks, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from notifiers import keys, outbox, signatures, slack
from notifiers.clicks import Answer, Click, answerable, parse
from notifiers.notifying import Notifier
from reconciler import numbers, wire
from reconciler.admin import members, principals
from reconciler.context import Context
from reconciler.core.states import DecisionChannel
from reconciler.errors import NebulaError, UnauthorizedError, shown
from reconciler.requests import deciding

log = logging.getLogger("nebula.slack")
ACK_WITHIN = 2.0  # seconds: Slack shows the person an error after 3


def router(ctx: Context, notifier: Notifier | None = None) -> APIRouter:
    """The endpoint, bound to ``ctx``; mount it on the web app."""
    verifier = signatures.RequestVerifier(ctx.settings.slack_signing_secret, ctx.clock)
    replies: Notifier = notifier or slack.SlackNotifier(
        ctx.settings.slack_bot_token, ctx.settings.slack_api_url
    )
    api = APIRouter()

    @api.post("/slack/interactions", include_in_schema=False)
    async def interactions(request: Request, background: BackgroundTasks) -> Response:
        body = await request.body()  # at most 1 MiB: web.admission refused a larger one unread
        try:
            verifier.check(body, request.headers)
        except UnauthorizedError as exc:
            log.warning("refused a Slack interaction: %s", exc.message)
            return _error(401, "unauthorized", exc.message)
        try:
            click = parse(body)
        except ValueError as exc:
            return _error(400, "bad-request", str(exc))
        if click is None:
            return Response(status_code=200)  # another kind of interaction: nothing to do
        deciding_now = asyncio.ensure_future(run_in_threadpool(decide, ctx, click))
        try:
            answer = await asyncio.wait_for(asyncio.shield(deciding_now), ACK_WITHIN)
        except TimeoutError:
            # The store is slow (a long write elsewhere): acknowledge now, follow up after.
            background.add_task(follow_up, deciding_now, click)
            return Response(status_code=200)
        background.add_task(follow_up, deciding_now, click, answer)
        return Response(status_code=200)

    async def follow_up(
        pending: asyncio.Future[Answer], click: Click, answer: Answer | None = None
    ) -> None:
        answer = answer if answer is not None else await pending
        if answer.ephemeral is not None:
            await run_in_threadpool(
                _reply, replies, click.response_url, answer.ephemeral, ctx.settings.slack_api_url
            )
        if answer.deliver and (notifier is not None or ctx.settings.slack_bot_token):
            await run_in_threadpool(_deliver, ctx, notifier, answer.deliver)

    return api


def decide(ctx: Context, click: Click) -> Answer:
    """Record the decision, or say why not; a refusal changes nothing (its transaction is
    rolled back, an expiry noticed on the way included: the scheduler records that)."""
    approval_id = numbers.whole(click.value)
    if approval_id is None:
        return Answer(f"This button does not name an approval ({shown(click.value, 40)}).")
    verb = "approve" if click.approve else "reject"
    try:
        with ctx.db.transaction() as session:
            member = members.by_slack_id(session, click.user_id) if click.user_id else None
            if member is None:
                return Answer(
                    f"Your Slack account ({click.user_id or 'unknown'}) is not linked to a Nebula "
                    f"member, so you cannot {verb} approval {approval_id}. An owner can link it "
                    f"with: nebula member add NAME --role admin --slack-id {click.user_id or 'U…'}"
                )
            deciding.decide(
                session,
                ctx,
                approval_id,
                principals.of_member(session, member),
                approve=click.approve,
                via=DecisionChannel.SLACK,
            )
    except NebulaError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return Answer(f"Not done: {exc.message}{hint}")
    except Exception:
        log.exception("recording a Slack decision on approval %s failed", approval_id)
        return Answer(
            f"Nebula could not record your decision on approval {approval_id}. Try again, or "
            f"use: nebula {verb} {approval_id}"
        )
    return Answer(deliver=[keys.approval_update(approval_id)])


def _reply(notifier: Notifier, response_url: str, text: str, api_url: str) -> None:
    if not response_url:
        return
    if not answerable(response_url, api_url):
        log.warning(
            "did not answer a Slack click at a response_url outside Slack",
            extra={"response_url": shown(response_url, 80)},
        )
        return
    try:
        notifier.respond(response_url, text)
    except NebulaError as exc:
        log.warning("could not reply in Slack: %s", exc.message)


def _deliver(ctx: Context, notifier: Notifier | None, wanted: list[str]) -> None:
    """Update the message now rather than on the scheduler's next round; a failure here is
    left to the outbox's retries."""
    try:
        outbox.deliver_due(ctx, notifier, keys=wanted)
    except Exception:
        log.exception("delivering %s right after a Slack decision failed", ", ".join(wanted))


def _error(status: int, code: str, message: str) -> Response:
    return JSONResponse(wire.body(code, message), status_code=status)
