"""`ssot/errors.py`: one line per user error."""
from __future__ import annotations


def test_one_line_folds_messages_and_keeps_a_workers_original_line():
    from ssot.errors import DataError, one_line

    assert one_line(DataError("missing\n  folder")) == "missing folder"
    wrapped = DataError("Caught DataError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
                        '  File "x.py", line 1\nssot.errors.DataError: cannot read image a.jpg: bad')
    assert one_line(wrapped) == "cannot read image a.jpg: bad"
