"""`analysis/dashboard/templates`: the one environment of the pages, autoescaped, and JSON fit for a script."""
from __future__ import annotations

import json

from markupsafe import Markup

from analysis.dashboard.templates import ENV, param_label, render, script_json

TRICKY = ["</script><script>alert(1)</script>", "<!-- <script>", "a & b", "it's \"quoted\"", "back\\slash </", "λ ε ★"]


def test_json_for_a_script_cannot_end_it_and_reads_back_the_same():
    text = script_json(json.dumps({"values": TRICKY}))
    assert isinstance(text, Markup)
    assert not any(char in text for char in "<>&'")  # nothing a browser's HTML parser acts on inside <script>
    assert json.loads(str(text)) == {"values": TRICKY}


def test_values_are_escaped_by_the_environment_and_markup_only_where_said():
    for name in ENV.list_templates(extensions=["html"]):
        assert ENV.get_template(name).environment.autoescape is True, name
    block = render("rungs.html", correlations=[{"rung": 2, "n": 5, "rho_text": "0.50", "interval": "[0.1, 0.9]",
                                                "strength": "<b>strong</b>", "verdict": "a & b"}],
                   what="<i>x</i>", max_epochs=4, min_trials=4)
    assert "<td>&lt;b&gt;strong&lt;/b&gt;</td>" in block and "<li>a &amp; b</li>" in block and "&lt;i&gt;x&lt;/i&gt;" in block
    assert param_label("lambda_ot") == Markup("λ<sub>OT</sub>")  # a known name's markup is kept
    assert param_label("<b>mine</b>") == "&lt;b&gt;mine&lt;/b&gt;"  # any other name is text
