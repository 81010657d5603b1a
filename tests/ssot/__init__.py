"""Tests of `ssot`."""
