"""What every training and export job shares, one concept per module:

- ``devices``: ``select_strategy`` / ``is_chief``, the ``tf.distribute`` strategy a ``RuntimeConfig`` asks
  for and whether this process writes the outputs (one writer per job).
- ``precision``: ``set_precision_policy``, float32 / bfloat16 / float16 compute with float32 variables.
- ``signals``: ``stop_requests``, SIGTERM / SIGINT as a stop request a loop polls between steps.
- ``summaries``: ``write_scalars`` and ``LazySummaryWriter`` (TensorBoard).
- ``console``: ``progress_bar``, ``log_line``, ``format_duration`` (ETAs).
- ``outputs``: ``atomic_write`` / ``atomic_directory`` (outputs appear whole or not at all) and
  ``check_writable`` (an output that could not be written is reported before the work, not after it).
- ``restore``: ``restore_checkpoint``, a restore that may not fit, reported in one line.

Every name is also importable from ``electra_tf.runtime`` itself.
"""

from electra_tf.runtime.console import format_duration, log_line, progress_bar
from electra_tf.runtime.devices import is_chief, select_strategy
from electra_tf.runtime.outputs import atomic_directory, atomic_write, check_writable
from electra_tf.runtime.precision import PRECISION_POLICIES, set_precision_policy
from electra_tf.runtime.restore import restore_checkpoint
from electra_tf.runtime.signals import stop_requests
from electra_tf.runtime.summaries import LazySummaryWriter, write_scalars
