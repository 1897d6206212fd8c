"""E-mail through NEBULA_SMTP_URL to a real SMTP server (aiosmtpd) that offers STARTTLS and
takes AUTH only over TLS: one message per event and channel, to the channel's addresses,
with a plain text and an HTML part and headers to filter on; the password never leaves TLS
and never shows; a mail server that is down delays the message, never a deployment."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from notifiers import outbox
from tests.notifiers import channelkit
from tests.notifiers.flows import Flow, image, nebula_toml
from tests.notifiers.test_flows import with_faults
from tests.plugins.mailserver import PASSWORD, USER, MailServer

SENDER = "Nebula <nebula@example.com>"


def _mail(flow: Flow, url: str) -> None:
    flow.ctx.settings = flow.ctx.settings.with_(smtp_url=url, email_from=SENDER)


def _fail_api(flow: Flow, tmp_path: Path) -> None:
    with_faults(flow, tmp_path, {image("api", 2): "image-pull"})
    flow.reconcile()
    flow.deliver()
    flow.push(nebula_toml(2), "Bad api image")
    for _ in range(3):
        flow.reconcile()
        flow.deliver()
        flow.clock.advance(seconds=120)


def test_a_failure_is_one_message_per_channel_over_starttls_with_auth(
    flow: Flow, mail_server: MailServer, tmp_path: Path
) -> None:
    _mail(flow, mail_server.url())
    flow.project(text=nebula_toml(1))
    channelkit.add(flow.ctx, "email", "ops@example.com,oncall@example.com", on="failure")
    channelkit.add(flow.ctx, "email", "shop-team@example.com", on="failure", project="shop")
    _fail_api(flow, tmp_path)

    first, second = mail_server.accepted
    assert (first.rcpt_tos, second.rcpt_tos) == (
        ["ops@example.com", "oncall@example.com"], ["shop-team@example.com"],
    )  # fmt: skip
    assert all(m.encrypted and m.login == USER for m in (first, second))
    assert first.mail_from == "nebula@example.com"
    message = first.message
    failed = next(d for d in flow.deployments("staging") if d["state"] == "failed")
    assert message["Subject"] == "[Nebula] Deployment failed: api r-2 in shop/staging"
    assert message["From"] == SENDER
    assert message["To"] == "ops@example.com, oncall@example.com"
    assert message["List-Id"] == "Nebula shop <shop.nebula.nebula.example.com>"
    assert message["X-Nebula-Event"] == "deployment.failed"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",))
    page = message.get_body(("html",))
    assert text is not None and page is not None
    assert text.get_content().splitlines() == [
        "Deployment failed: api r-2 in shop/staging",
        "",
        failed["message"],
        "",
        "Blocker: image-pull",
        "Keeps serving: r-1",
        "Kind: deploy",
        f"Deployment: #{failed['id']}",
        "",
        f"Open the deployment: https://nebula.example.com/deployments/{failed['id']}",
    ]
    html = page.get_content()
    assert "<h2>Deployment failed: api r-2 in shop/staging</h2>" in html
    assert '<tr><th align="left">Keeps serving</th><td>r-1</td></tr>' in html
    assert f'<a href="https://nebula.example.com/deployments/{failed["id"]}">' in html
    # A retry would be the same message: its Message-ID comes from the notice.
    assert first.message["Message-ID"] != second.message["Message-ID"]


def test_a_wrong_password_is_the_channels_last_error_and_never_shown(
    flow: Flow, mail_server: MailServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "not-the-pa55word"
    _mail(flow, mail_server.url(password=wrong))
    flow.project(text=nebula_toml(1))
    channel, _ = channelkit.add(flow.ctx, "email", "ops@example.com", on="failure")
    _fail_api(flow, tmp_path)
    assert mail_server.accepted == []
    delivered, error = channelkit.record(flow.ctx, channel)
    assert delivered is None
    assert error == (
        f"the SMTP server 127.0.0.1:{mail_server.port} refused the login of NEBULA_SMTP_URL (535)"
    )
    rows = [str(r.last_error) + str(r.payload) for r in flow.outbox()]
    for secret in (wrong, PASSWORD):
        assert secret not in caplog.text and not [r for r in rows if secret in r]
    _mail(flow, mail_server.url())  # the setting fixed: the next retry goes out
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    flow.deliver()
    assert [m.rcpt_tos for m in mail_server.accepted] == [["ops@example.com"]]


def test_no_password_goes_to_a_server_without_starttls(
    flow: Flow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = MailServer(tmp_path, starttls=False)
    try:
        _mail(flow, plain.url())
        flow.project(text=nebula_toml(1))
        channel, _ = channelkit.add(flow.ctx, "email", "ops@example.com", on="failure")
        _fail_api(flow, tmp_path)
        assert plain.accepted == []
        assert channelkit.record(flow.ctx, channel)[1] == (
            f"the SMTP server 127.0.0.1:{plain.port} offers no STARTTLS: the password of "
            "NEBULA_SMTP_URL is not sent in the clear"
        )
        _mail(flow, plain.url(user=None))  # a relay that takes mail without a login
        flow.clock.advance(seconds=outbox.MAX_RETRY)
        flow.deliver()
        (accepted,) = plain.accepted
        assert (accepted.encrypted, accepted.login) == (False, None)
    finally:
        plain.stop()


def test_a_mail_server_that_is_down_delays_the_message_not_the_deployment(
    flow: Flow, mail_server: MailServer, tmp_path: Path
) -> None:
    _mail(flow, f"smtp://{USER}:{PASSWORD}@127.0.0.1:1")
    flow.project(text=nebula_toml(1))
    channel, _ = channelkit.add(flow.ctx, "email", "ops@example.com")
    _fail_api(flow, tmp_path)
    assert [d["state"] for d in flow.deployments("staging")] == ["healthy", "healthy", "failed"]
    error = channelkit.record(flow.ctx, channel)[1]
    assert error is not None and error.startswith("the SMTP server 127.0.0.1:1 cannot be reached")
    _mail(flow, mail_server.url())
    flow.clock.advance(seconds=outbox.MAX_RETRY)
    flow.deliver()
    subjects = [m.message["Subject"] for m in mail_server.accepted]
    # The first request was cancelled by the second push before it could go out: people
    # are told of that (once), not asked for an approval that no longer waits.
    assert subjects == [
        "[Nebula] Cancelled: shop/production",
        "[Nebula] Approval needed: shop/production",
        "[Nebula] Deployment failed: api r-2 in shop/staging",
    ]
