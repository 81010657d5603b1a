"""Tests of `analysis.dashboard`."""
