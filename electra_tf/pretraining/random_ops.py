"""Pre-training's keyed randomness: masking and generator sampling draw by (seed, step, stream, example row).

The generator is ``modeling/keyed_random`` (a counter-based hash, no state): a value depends only on the
seed, the step, the stream and the example's global row, so one device, N replicas and N accumulated
micro-batches given the same global batch draw exactly the same masks and samples, and a resumed run
replays them. This module names the streams of one step.
"""

from electra_tf.modeling.keyed_random import hash32, keyed_uniform, step_key  # noqa: F401 (the streams' API)

# Stream ids: independent draws of one step (the training runtime's per-example dropout draws stream
# ``runtime.step.DROPOUT_STREAM``, 4).
MASK_POSITIONS, MASK_REPLACE, GUMBEL = 1, 2, 3
