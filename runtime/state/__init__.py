"""Stage 5, state: `jf.Variable` and `jf.Module`."""
