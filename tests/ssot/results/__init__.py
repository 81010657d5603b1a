"""Tests of `ssot.results`."""
