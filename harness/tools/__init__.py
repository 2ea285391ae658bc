"""Wrappers around measurement programs: command lines in, typed results out."""
