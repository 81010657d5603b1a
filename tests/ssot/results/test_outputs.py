"""`ssot.results.outputs.check_output` (``ssot.cli.check_output``): every output location is tried
before any work, refused in one line, and nothing is left behind."""
from __future__ import annotations

import os

import pytest

from ssot.errors import ResultsError, SSOTError
from ssot.results.outputs import check_output


def test_a_folder_that_can_be_created_passes_and_nothing_is_left_behind(tmp_path):
    check_output(tmp_path / "a" / "b" / "c", "--out", folder=True)
    check_output(tmp_path / "x" / "run.json", "--out", folder=False)
    assert list(tmp_path.iterdir()) == []  # the folders and the file were created to try, then removed
    (tmp_path / "kept").mkdir()
    check_output(tmp_path / "kept", "--out", folder=True)
    assert list((tmp_path / "kept").iterdir()) == []  # the probe file is gone


def test_a_file_in_the_way_or_an_existing_result_is_refused(a_file, tmp_path):
    with pytest.raises(SSOTError, match=f"--out {a_file / 'x'} cannot be created: {a_file} is a file, not a folder"):
        check_output(a_file / "x", "--out", folder=True)
    with pytest.raises(SSOTError, match=f"--out {a_file} is a file, not a folder"):
        check_output(a_file, "--out", folder=True)
    with pytest.raises(SSOTError, match="already exists; choose another --out"):
        check_output(a_file, "--out", folder=False)
    check_output(a_file, "--db", folder=False, exists_ok=True)  # a database a command continues
    with pytest.raises(SSOTError, match="is a folder, not a file"):
        check_output(tmp_path, "--out", folder=False)
    (tmp_path / "results.md").write_text("old")
    with pytest.raises(ResultsError, match="results.md already exists; move the old files away or choose another --out"):
        check_output(tmp_path, "--out", folder=True, new=["results.csv", "results.md"])
    assert (tmp_path / "results.md").read_text() == "old"


@pytest.mark.skipif(not os.path.isdir("/sys") or not os.access("/sys", os.W_OK),
                    reason="needs a folder that os.access calls writable but refuses to write (/sys, as root)")
def test_the_location_is_tried_not_asked_about():
    """``os.access`` says yes for root even where nothing can be written; creating it says no."""
    with pytest.raises(SSOTError, match="--out /sys/ssot-check-output cannot be written"):
        check_output("/sys/ssot-check-output", "--out", folder=True)


def test_an_output_is_never_one_of_the_inputs_whatever_path_leads_to_it(tmp_path):
    """A file output, a file written into a folder output and a folder whose files may be
    replaced: refused when they are an input, through a symlink (either side), ``..`` or a hard
    link, with or without ``exists_ok`` (``--overwrite``)."""
    data = tmp_path / "exp"
    data.mkdir()
    trials = data / "trials.csv"
    trials.write_text("rows")
    (tmp_path / "link.csv").symlink_to(trials)
    (tmp_path / "input-link.csv").symlink_to(tmp_path / "out.html")
    (tmp_path / "out.html").write_text("old page")
    os.link(trials, tmp_path / "hard.csv")
    cases = [  # (location, folder, new, inputs, exists_ok)
        (trials, False, (), [trials], True),
        (trials, False, (), [trials], False),
        (tmp_path / "exp" / ".." / "exp" / "trials.csv", False, (), [trials], True),
        (tmp_path / "link.csv", False, (), [trials], True),
        (tmp_path / "out.html", False, (), [tmp_path / "input-link.csv"], True),
        (tmp_path / "hard.csv", False, (), [trials], True),
        (tmp_path / "exp", True, ["trials.csv"], [trials], True),
    ]
    for location, folder, new, inputs, exists_ok in cases:
        with pytest.raises(SSOTError, match="is one of the command's inputs .*: an output never replaces what the command reads"):
            check_output(location, "--out", folder=folder, new=new, inputs=inputs, exists_ok=exists_ok)
    with pytest.raises(SSOTError, match=f"--figures-dir {data} holds {trials}, one of the command's inputs"):
        check_output(data, "--figures-dir", folder=True, exists_ok=True, inputs=[trials])
    assert trials.read_text() == "rows" and (tmp_path / "out.html").read_text() == "old page"
    check_output(tmp_path / "out.html", "--out", folder=False, exists_ok=True, inputs=[trials])  # another file: fine
    check_output(data, "--out", folder=True, new=["proxy.md"], inputs=[trials])  # a new file beside an input: fine


def test_new_outputs_never_look_at_the_inputs(tmp_path):
    """Every input exists, so an output that does not exist yet cannot be one: the inputs are not
    even read (a command listing thousands of images pays nothing)."""
    def inputs():
        raise AssertionError("the inputs were read")
        yield

    check_output(tmp_path / "new.pt", "--out", folder=False, inputs=inputs())
    check_output(tmp_path / "folder", "--out", folder=True, new=["a.csv"], inputs=inputs())
