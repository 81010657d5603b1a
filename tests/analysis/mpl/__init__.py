"""Tests of `analysis.mpl`."""
