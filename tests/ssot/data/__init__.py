"""Tests of `ssot.data`."""
