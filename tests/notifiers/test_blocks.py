"""The Block Kit builders: shapes Slack accepts, limits enforced, nothing unescaped."""

from __future__ import annotations

import pytest

from notifiers import blocks


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<!channel> deploy", "&lt;!channel&gt; deploy"),
        ("a & b", "a &amp; b"),
        ("<https://evil.example|click>", "&lt;https://evil.example|click&gt;"),
        ("plain", "plain"),
    ],
)
def test_escape_neutralises_slack_control_characters(text: str, shown: str) -> None:
    assert blocks.escape(text) == shown


def test_cut_keeps_short_text_and_marks_a_cut() -> None:
    assert blocks.cut("abc", 3) == "abc"
    assert blocks.cut("abcdef", 4) == "abc…"
    assert len(blocks.cut("x" * 5000, blocks.SECTION_TEXT)) == blocks.SECTION_TEXT


def test_buttons_carry_action_value_and_style() -> None:
    assert blocks.button("Approve", "nebula_approve", "12", "primary") == {
        "type": "button",
        "text": {"type": "plain_text", "text": "Approve", "emoji": True},
        "action_id": "nebula_approve",
        "value": "12",
        "style": "primary",
    }
    assert "style" not in blocks.button("Later", "x", "1")


def test_header_and_section_texts_are_cut_to_slack_limits() -> None:
    assert len(blocks.header("h" * 400)["text"]["text"]) == blocks.HEADER_TEXT
    section = blocks.section("s" * 4000, fields=[f"f{i}" for i in range(12)])
    assert len(section["text"]["text"]) == blocks.SECTION_TEXT
    assert len(section["fields"]) == blocks.SECTION_FIELDS


def test_empty_texts_become_a_space_since_slack_refuses_empty_ones() -> None:
    assert blocks.section("")["text"]["text"] == " "


def test_code_cannot_be_closed_early_by_a_backtick() -> None:
    assert blocks.code("a`b<c>") == "`a'b&lt;c&gt;`"


def test_preformatted_stops_at_a_whole_line_within_the_limit() -> None:
    text = blocks.preformatted([f"line {i} " + "x" * 50 for i in range(100)], limit=500)
    assert len(text) <= 500
    assert text.startswith("```\nline 0 ")
    assert text.endswith("…\n```")
    assert "```" not in blocks.preformatted(["a ``` b"])[3:-3]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://nebula.example.com/projects/shop",
            "<https://nebula.example.com/projects/shop|Open>",
        ),
        ("https://x.example/a|b", "Open"),  # would end the link early
        ("javascript:alert(1)", "Open"),
        ("https://x.example/<b>", "Open"),
    ],
)
def test_links_refuse_urls_that_could_break_out(url: str, shown: str) -> None:
    assert blocks.link(url, "Open") == shown


def test_context_keeps_at_most_ten_elements_and_drops_empty_ones() -> None:
    block = blocks.context("", *[str(i) for i in range(12)])
    assert [e["text"] for e in block["elements"]] == [str(i) for i in range(10)]
