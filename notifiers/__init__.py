"""Notifications: the outbox, the Slack notifier, and decisions made in Slack.

The pieces, in the order a notice flows through them::

    keys           kinds of notice and their idempotency keys (one key per cause)
    outbox         enqueue (in the caller's transaction) and deliver_due (claims, retries)
    delivering     from a row to a Slack call: post, edit, wait for the request, skip
    gathering      store rows -> facts, read when the notice is written or sent
    facts          what a notice says, as frozen values; links to the status page
    manifestdiffs  rendered objects a request creates, configures and deletes
    messages       facts -> Slack messages, built with blocks (pure)
    blocks         Block Kit builders with Slack's limits and escaping
    notifying      the Notifier interface, Message, Posted, RateLimited, Unanswered
    slack          the Notifier on slack_sdk's WebClient (the one module that sends)
    signatures     v0 request signatures, the 5-minute window, replays
    interactions   POST /slack/interactions: Approve and Reject clicked in Slack
"""
