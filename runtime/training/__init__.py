"""Stage 8, training libraries: optimizers, losses, initializers and checkpoints."""
