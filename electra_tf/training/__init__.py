"""The training runtime both jobs share: the replica step, the compiled loop, checkpoints that hold the input
position, and the host loop with its hooks, signals and NaN line (docs/architecture.md)."""
