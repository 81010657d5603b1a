"""Tests of `tune`."""
