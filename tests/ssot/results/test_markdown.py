"""`ssot/results/markdown.py`: the one escaping of user-controlled text in the Markdown the commands write."""
from __future__ import annotations

from ssot.results.markdown import Markdown, bold, escape, markdown_table


def test_user_text_is_shown_literally_and_plain_text_unchanged():
    cases = {
        "<script>alert(1)</script>": "&lt;script&gt;alert(1)&lt;/script&gt;",
        "a|b": "a\\|b", "**x**": "\\*\\*x\\*\\*", "[x](http://e)": "\\[x\\](http://e)", "`code`": "\\`code\\`",
        "_evil_": "\\_evil\\_", "A&B": "A&amp;B", "back\\slash": "back\\\\slash", "two\nlines": "two lines",
        # unchanged: what the tables hold every day
        "last_epoch": "last_epoch", "trial_0001": "trial_0001", "runs/exp-1/P2H": "runs/exp-1/P2H", "-1.5 ± 0.2": "-1.5 ± 0.2",
        "0.95": "0.95", "confirmed (P(best) = 0.95)": "confirmed (P(best) = 0.95)",
    }
    for text, shown in cases.items():
        assert escape(text) == shown, text


def test_cells_are_escaped_except_markdown_ones():
    table = markdown_table(["name", "mean"], [["<b>x</b>", bold("1.0 ± 0.1")], ["a|b", Markdown("*kept*")]], "lr")
    assert table == ("| name | mean |\n|---|---:|\n| &lt;b&gt;x&lt;/b&gt; | **1.0 ± 0.1** |\n| a\\|b | *kept* |\n")
