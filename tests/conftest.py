"""Shared test setup: this folder is on sys.path, so test modules can import `servers`."""
