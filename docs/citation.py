"""MkDocs hook: the "Cite" page, rendered from ``CITATION.cff`` (the one place the citations live).

The marker ``<!-- citation -->`` becomes, for the paper (the first ``references`` entry of
``CITATION.cff``) and for this software: the reference in words, what is known about it, and a
BibTeX entry with only the fields ``CITATION.cff`` has (none is made up).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CITATION_FILE = ROOT / "CITATION.cff"
MARKER = "<!-- citation -->"
PAPER_KEY, SOFTWARE_KEY = "zhai-ssot", "ssot-tune"  # the BibTeX keys


def citation() -> dict[str, Any]:
    """``CITATION.cff``, read."""
    return yaml.safe_load(CITATION_FILE.read_text())


def _names(authors: list[dict[str, str]], bibtex: bool = False) -> str:
    names = []
    for a in authors:
        if "family-names" in a:
            names.append(f"{a['family-names']}, {a['given-names']}" if bibtex else f"{a['given-names']} {a['family-names']}")
        else:
            names.append("{" + a["name"] + "}" if bibtex else a["name"])
    return " and ".join(names) if bibtex else ", ".join(names)


def bibtex(kind: str, key: str, fields: dict[str, str]) -> str:
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields.items() if value)
    return f"@{kind}{{{key},\n{body}\n}}"


def citation_markdown() -> str:
    """The Markdown the marker becomes."""
    cff = citation()
    paper = cff["references"][0]
    paper_fields = {"author": _names(paper["authors"], bibtex=True), "title": "{" + paper["title"] + "}"}
    software_fields = {"author": _names(cff["authors"], bibtex=True), "title": "{" + cff["title"] + "}",
                       "version": str(cff["version"])}
    affiliations = list(dict.fromkeys(a["affiliation"] for a in paper["authors"] if a.get("affiliation")))
    return "\n".join([
        "## The paper (the method)", "",
        f"{_names(paper['authors'])}. *{paper['title']}*.", "",
        " ".join(paper.get("notes", "").split()) + (f" Affiliations: {'; '.join(affiliations)}." if affiliations else ""), "",
        "```bibtex", bibtex("misc", PAPER_KEY, paper_fields), "```", "",
        "## This software", "",
        f"{_names(cff['authors'])}. *{cff['title']}*, version {cff['version']}.", "",
        "```bibtex", bibtex("software", SOFTWARE_KEY, software_fields), "```", "",
    ])


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return markdown.replace(MARKER, citation_markdown()) if MARKER in markdown else markdown
