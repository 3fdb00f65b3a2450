"""The reference's optimizer: AdamW without bias correction, its LR schedule and layer-wise LR decay.

- Schedule: ``polynomial_decay(lr, step, num_train_steps, end=0, power) * min(1, step / warmup)``, with
  warmup = max(num_train_steps * warmup_proportion, num_warmup_steps). Warmup multiplies the decayed
  rate (the LR rises and decays at once), and the first update (step 0) has LR 0, as in the reference.
- Update: ``m / (sqrt(v) + eps) + wd * param`` (decoupled decay, no bias correction), decay skipped
  for variables whose reference name matches LayerNorm, layer_norm or bias. ``bias_correction=True``
  (opt-in, not the reference) uses Adam's ``m / (1 - b1^t)`` and ``v / (1 - b2^t)`` instead: without it the
  first updates are up to 6.6x larger than Adam's, which short warmups do not hide (docs/short_runs.md).
- Layer-wise decay (fine-tuning): ``lr * d^(L + 2 - depth)``, depth 0 for embeddings, i + 1 for
  ``encoder/layer_i/``, L + 2 for ``task_specific/`` (so the top layer already gets d^2, as the reference).
"""

import contextlib
import functools
import re
import typing

import keras
import numpy as np
import tensorflow as tf

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


class ReferenceSchedule(keras.optimizers.schedules.LearningRateSchedule):
  """Polynomial decay to 0 at ``num_train_steps``, times a multiplicative linear warmup."""

  def __init__(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
               warmup_proportion: float = 0.0, power: float = 1.0):
    self.learning_rate = float(learning_rate)
    self.num_train_steps = int(num_train_steps)
    self.warmup_steps = max(num_train_steps * warmup_proportion, num_warmup_steps)
    self.power = float(power)

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    progress = tf.minimum(step, float(self.num_train_steps)) / float(self.num_train_steps)
    lr = self.learning_rate * tf.pow(1.0 - progress, self.power)
    if self.warmup_steps > 0:
      lr *= tf.minimum(1.0, step / float(self.warmup_steps))
    return lr

  def get_config(self):
    return dict(learning_rate=self.learning_rate, num_train_steps=self.num_train_steps,
                num_warmup_steps=self.warmup_steps, power=self.power)


class SettableSchedule(ReferenceSchedule):
  """``ReferenceSchedule`` whose peak LR, length and warmup live in variables that ``set`` changes: one compiled
  training step then serves runs of any peak LR and length (fine-tuning reuses its trainers across runs:
  ``finetuning.trainer_cache.TrainerCache``). Whether there is a warmup is fixed when it is made.

  Its values inside a compiled step equal ``ReferenceSchedule``'s bit for bit: TensorFlow (XLA, and grappler's
  constant folding in a graph) turns a division by a constant into a multiplication by the constant's float32
  reciprocal, which is what this computes from the variables (``tests/test_optimization.py``). Evaluated eagerly
  (the logged learning rate) they may differ in the last bit.
  """

  def __init__(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
               warmup_proportion: float = 0.0, power: float = 1.0):
    super().__init__(learning_rate, num_train_steps, num_warmup_steps, warmup_proportion, power)
    self.has_warmup = self.warmup_steps > 0
    new = lambda name: tf.Variable(0.0, dtype=tf.float32, trainable=False, name=name)
    self._peak, self._steps, self._inv_steps, self._inv_warmup = (
        new("peak_learning_rate"), new("num_train_steps"), new("inverse_num_train_steps"),
        new("inverse_warmup_steps"))
    self.set(learning_rate, num_train_steps, num_warmup_steps, warmup_proportion)

  def set(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
          warmup_proportion: float = 0.0):
    """The schedule of ``ReferenceSchedule(learning_rate, num_train_steps, ...)`` from the next step on."""
    values = ReferenceSchedule(learning_rate, num_train_steps, num_warmup_steps, warmup_proportion, self.power)
    if (values.warmup_steps > 0) != self.has_warmup:
      raise ValueError(f"this schedule was made {'with' if self.has_warmup else 'without'} a warmup; a run "
                       f"{'without' if self.has_warmup else 'with'} one needs a new schedule")
    self.learning_rate, self.num_train_steps, self.warmup_steps = (values.learning_rate, values.num_train_steps,
                                                                   values.warmup_steps)
    f32 = np.float32
    self._peak.assign(f32(self.learning_rate))
    self._steps.assign(f32(self.num_train_steps))
    self._inv_steps.assign(f32(1.0) / f32(self.num_train_steps))
    self._inv_warmup.assign(f32(1.0) / f32(self.warmup_steps) if self.has_warmup else f32(0.0))

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    progress = tf.minimum(step, self._steps) * self._inv_steps
    lr = self._peak * tf.pow(1.0 - progress, self.power)
    if self.has_warmup:
      lr *= tf.minimum(1.0, step * self._inv_warmup)
    return lr


def learning_rate_schedule(learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
                           warmup_proportion: float = 0.0, power: float = 1.0) -> ReferenceSchedule:
  return ReferenceSchedule(learning_rate, num_train_steps, num_warmup_steps, warmup_proportion, power)


def layerwise_lr_multipliers(num_layers: int, decay: float) -> typing.Dict[str, float]:
  """``{name key: LR multiplier}`` as the reference's ``_get_layer_lrs``."""
  depths = {"/embeddings/": 0, "/embeddings_project/": 0, "task_specific/": num_layers + 2}
  for layer in range(num_layers):
    depths[f"encoder/layer_{layer}/"] = layer + 1
  return {key: decay ** (num_layers + 2 - depth) for key, depth in depths.items()}


def lr_multiplier_for(name: str, multipliers: typing.Mapping[str, float]) -> float:
  """The multiplier of the key found in ``name``; the reference raises for a variable matching none."""
  matches = [m for key, m in multipliers.items() if key in name]
  if not matches:
    raise ValueError(f"variable {name} matches no layer-wise learning-rate key "
                     f"({', '.join(multipliers)}); name the variable as the reference does")
  if len(matches) > 1:
    raise ValueError(f"variable {name} matches several layer-wise learning-rate keys")
  return matches[0]


class AdamWeightDecay(keras.optimizers.Optimizer):
  """The reference's ``AdamWeightDecayOptimizer`` as a Keras 3 optimizer (works under tf.distribute).

  ``variable_names`` maps ``id(variable)`` to the reference name used for the weight-decay exclusion
  and the layer-wise keys (Keras paths differ from the reference's); unmapped variables use ``.path``.
  ``lr_multipliers``: ``{name key: multiplier}`` (see ``layerwise_lr_multipliers``) or None.
  Slots are ``adam_m`` / ``adam_v`` like the reference's.
  Under several replicas ``apply`` sums each replica's gradients over the replicas, as Keras's optimizers do
  (``model.fit``), unless ``gradients_summed`` says the caller did: the replica step sums them itself, before it
  clips them, and sets it (one all-reduce per step, not two).
  ``apply_if`` applies only if a condition holds (the float16 loss scale's skipped steps).
  ``compile_per_device`` (set by the replica step when XLA is on and the step runs on several replicas): each
  device's update, all its variables at once, is one XLA function instead of a few small operations per variable
  (thousands for ELECTRA-Small); the arithmetic is ``update_step``'s.
  """

  compile_per_device = False
  gradients_summed = False

  def __init__(self, learning_rate, weight_decay_rate: float = 0.0, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-6,
               exclude_from_weight_decay: typing.Sequence[str] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
               variable_names: typing.Optional[typing.Mapping[int, str]] = None,
               lr_multipliers: typing.Optional[typing.Mapping[str, float]] = None,
               bias_correction: bool = False, name: str = "AdamWeightDecay", **kwargs):
    super().__init__(learning_rate=learning_rate, name=name, **kwargs)
    self.weight_decay_rate = weight_decay_rate
    self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
    self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
    self._names = dict(variable_names or {})
    self.lr_multipliers = dict(lr_multipliers) if lr_multipliers else None
    self.bias_correction = bool(bias_correction)

  def reference_name(self, variable) -> str:
    return self._names.get(id(variable), variable.path)

  def uses_weight_decay(self, name: str) -> bool:
    if not self.weight_decay_rate:
      return False
    return not any(re.search(pattern, name) for pattern in self.exclude_from_weight_decay)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    self._adam_m = [self.add_variable_from_reference(v, "adam_m") for v in var_list]
    self._adam_v = [self.add_variable_from_reference(v, "adam_v") for v in var_list]
    names = [self.reference_name(v) for v in var_list]
    # Per-variable constants, fixed when the optimizer is built: traced into the step as literals.
    self._decays = [self.weight_decay_rate if self.uses_weight_decay(n) else 0.0 for n in names]
    self._multipliers = [lr_multiplier_for(n, self.lr_multipliers) if self.lr_multipliers else 1.0
                         for n in names]

  def _all_reduce_sum_gradients(self, grads_and_vars):
    """Keras's TensorFlow back end sums the gradients over the replicas here; with ``gradients_summed`` they are
    summed already and pass as they are."""
    if self.gradients_summed:
      return list(grads_and_vars)
    return super()._all_reduce_sum_gradients(grads_and_vars)

  def apply_if(self, condition, grads, variables):
    """``apply(grads, variables)`` if the boolean scalar ``condition`` holds; if not, the variables and slots keep
    their values. ``iterations`` advances either way. No ``tf.cond`` around the update: under several replicas
    TensorFlow cannot hold the cross-replica update in a branch. None of Keras's own gradient options
    (clipping, accumulation, EMA, loss scale factor) apply here: the replica step does its own."""
    keras_options = {"clipnorm": self.clipnorm, "clipvalue": self.clipvalue, "global_clipnorm": self.global_clipnorm,
                     "use_ema": self.use_ema, "gradient_accumulation_steps": self.gradient_accumulation_steps,
                     "loss_scale_factor": self.loss_scale_factor}
    if any(keras_options.values()):
      raise ValueError(f"apply_if does not apply Keras's {', '.join(k for k, v in keras_options.items() if v)}; "
                       "use apply")
    variables = list(variables)
    if not self.built:
      self.build(variables)
    grads_and_vars = self._all_reduce_sum_gradients(zip(grads, [_unwrap(v) for v in variables]))
    with tf.name_scope(self.name):
      tf.__internal__.distribute.interim.maybe_merge_call(
          self._distributed_tf_update_step, self._distribution_strategy, grads_and_vars, self.learning_rate,
          condition)
    self._iterations.assign_add(1)

  def update_step(self, gradient, variable, learning_rate, condition=None):
    i = self._get_variable_index(variable)
    new_m, new_v, decrement = self._update_values(i, self._adam_m[i], self._adam_v[i], gradient, variable,
                                                  learning_rate, self.iterations, condition)
    self.assign(self._adam_m[i], new_m)
    self.assign(self._adam_v[i], new_v)
    self.assign_sub(variable, decrement)

  def _update_values(self, i, m, v, gradient, variable, learning_rate, iterations, condition):
    """Variable ``i``'s (new m, new v, decrement) from the values of m, v, its gradient and itself; (m, v, 0) if
    ``condition`` (None: true) does not hold."""
    dtype = variable.dtype
    # t counts this update (Keras increments ``iterations`` after the step)
    t = tf.cast(iterations + 1, dtype) if self.bias_correction else None
    m, v = tf.convert_to_tensor(m), tf.convert_to_tensor(v)
    new_m, new_v, decrement = _adam_update(
        m, v, tf.cast(gradient, dtype), tf.convert_to_tensor(variable), tf.cast(learning_rate, dtype), t,
        tf.constant(self._decays[i], dtype) if self._decays[i] else None, tf.constant(self._multipliers[i], dtype),
        self.beta_1, self.beta_2, self.epsilon)
    if condition is None:
      return new_m, new_v, decrement
    return (tf.where(condition, new_m, m), tf.where(condition, new_v, v),
            tf.where(condition, decrement, tf.zeros_like(decrement)))

  def _distributed_tf_update_step(self, distribution, grads_and_vars, learning_rate, condition=None):
    """The update of every variable's copies: one ``extended.update`` per variable, or with
    ``compile_per_device`` (in a cross-replica context) one XLA function per device over that device's copies of
    the variables, slots and gradients."""
    if not (self.compile_per_device and tf.distribute.in_cross_replica_context()):
      for grad, var in grads_and_vars:
        distribution.extended.update(var, self._update_variable, args=(grad, learning_rate, condition), group=False)
      return
    grads, variables = zip(*grads_and_vars)
    indices = tuple(self._get_variable_index(v) for v in variables)
    devices = distribution.extended.worker_devices

    def copies(value):  # its copy on each local device (a mirrored or per-replica value's, or the value itself)
      results = distribution.experimental_local_results(_unwrap(value))
      return results if len(results) > 1 else results * len(devices)

    variables, grads = [copies(v) for v in variables], [copies(g) for g in grads]
    slots = [copies(s) for i in indices for s in (self._adam_m[i], self._adam_v[i])]
    learning_rate, iterations = copies(learning_rate), copies(self.iterations)
    condition = [None] * len(devices) if condition is None else copies(condition)
    for d, device in enumerate(devices):
      with tf.device(device):
        self._device_update(indices, [c[d] for c in variables], [c[d] for c in slots], [c[d] for c in grads],
                            learning_rate[d], iterations[d], condition[d])

  def _update_variable(self, variable, gradient, learning_rate, condition):
    self.update_step(gradient, variable, learning_rate, condition)

  @functools.cached_property
  def _device_update(self):
    """The compiled update of one device's copies (a cached property: the function stays out of what Keras and
    TensorFlow track for checkpoints, so they hold what they held)."""
    return tf.function(self._update_device_copies, jit_compile=True, autograph=False)

  def _update_device_copies(self, indices, variables, slots, grads, learning_rate, iterations, condition):
    for k, (i, variable, gradient) in enumerate(zip(indices, variables, grads)):
      m, v = slots[2 * k], slots[2 * k + 1]
      new_m, new_v, decrement = self._update_values(i, m, v, gradient, variable, learning_rate, iterations,
                                                    condition)
      m.assign(new_m)
      v.assign(new_v)
      variable.assign_sub(decrement)

  def get_config(self):
    return {**super().get_config(), "weight_decay_rate": self.weight_decay_rate, "beta_1": self.beta_1,
            "beta_2": self.beta_2, "epsilon": self.epsilon,
            "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
            "lr_multipliers": self.lr_multipliers, "bias_correction": self.bias_correction}


@tf.function(autograph=False)
def _adam_update(m, v, gradient, variable, learning_rate, t, decay, multiplier, beta_1, beta_2, epsilon):
  """One variable's AdamWeightDecay update as values: (new m, new v, what to subtract from the variable).

  Traced once per shape (and per setting) in a process, so the many trainers a process builds (a search, the
  tests) call one graph per shape instead of adding every variable's operations again; TensorFlow and XLA
  inline the call, and the arithmetic is the same as written out in the step."""
  m = beta_1 * m + (1.0 - beta_1) * gradient
  v = beta_2 * v + (1.0 - beta_2) * tf.square(gradient)
  if t is not None:
    update = (m / (1.0 - tf.pow(tf.cast(beta_1, m.dtype), t))) / (
        tf.sqrt(v / (1.0 - tf.pow(tf.cast(beta_2, m.dtype), t))) + epsilon)
  else:
    update = m / (tf.sqrt(v) + epsilon)
  if decay is not None:
    update += decay * variable
  return m, v, learning_rate * multiplier * update


def _unwrap(variable):
  """A Keras variable's TensorFlow variable; anything else as it is."""
  return variable.value if isinstance(variable, keras.Variable) else variable


def create_optimizer(learning_rate: float, num_train_steps: int, weight_decay_rate: float = 0.01,
                     num_warmup_steps: int = 0, warmup_proportion: float = 0.0, lr_decay_power: float = 1.0,
                     layerwise_lr_decay_power: float = -1.0, n_transformer_layers: typing.Optional[int] = None,
                     variable_names: typing.Optional[typing.Mapping[int, str]] = None,
                     bias_correction: bool = False, settable_schedule: bool = False) -> AdamWeightDecay:
  """The reference's ``create_optimizer`` (gradient clipping is the caller's: ``clip_by_global_norm``).
  ``settable_schedule``: a ``SettableSchedule`` (its peak LR and length can change after compilation)."""
  schedule = (SettableSchedule if settable_schedule else ReferenceSchedule)(
      learning_rate, num_train_steps, num_warmup_steps, warmup_proportion, lr_decay_power)
  multipliers = None
  if layerwise_lr_decay_power > 0:
    if n_transformer_layers is None:
      raise ValueError("layer-wise learning-rate decay needs n_transformer_layers")
    multipliers = layerwise_lr_multipliers(n_transformer_layers, layerwise_lr_decay_power)
  return AdamWeightDecay(schedule, weight_decay_rate=weight_decay_rate, variable_names=variable_names,
                         lr_multipliers=multipliers, bias_correction=bias_correction)


def clip_by_global_norm(grads, clip_norm: float = 1.0):
  """Clip as the reference (``tf.clip_by_global_norm`` at 1.0); returns (clipped grads, global norm)."""
  return tf.clip_by_global_norm(grads, clip_norm)


# --- gradient accumulation (both training loops) -------------------------------------------------------------

def split_batch(batch: typing.Mapping[str, typing.Any], num_micro_batches: int) -> dict:
  """``{name: [B, ...]}`` -> ``{name: [n, B / n, ...]}``: micro-batch i holds rows i*B/n .. (i+1)*B/n - 1."""
  def split(value):
    value = tf.convert_to_tensor(value)
    rows = value.shape[0] // num_micro_batches if value.shape[0] is not None else None
    out = tf.reshape(value, tf.concat([[num_micro_batches, -1], tf.shape(value)[1:]], 0))
    out.set_shape([num_micro_batches, rows] + value.shape[1:].as_list())  # keep the static shapes
    return out
  return {name: split(value) for name, value in batch.items()}


def accumulate(micro_step, batch: typing.Mapping[str, typing.Any], num_micro_batches: int, zeros):
  """``sum_i micro_step(micro_batch_i, i)`` over the ``split_batch`` micro-batches of ``batch``.

  ``micro_step(part, i)`` returns a nest of tensors shaped like ``zeros`` (gradients, losses, metric sums).
  A ``tf.while_loop`` with ``parallel_iterations=1`` runs one micro-batch at a time, so only one
  micro-batch's activations are alive at once (an unrolled Python loop lets TensorFlow run them together).
  The running sums are loop tensors, never variables: nothing of a half-done step can be checkpointed.
  """
  parts = split_batch(batch, num_micro_batches)

  def body(i, total):
    out = micro_step({name: value[i] for name, value in parts.items()}, i)
    return i + 1, tf.nest.map_structure(tf.add, total, out)

  _, total = tf.while_loop(lambda i, _: i < num_micro_batches, body, (tf.constant(0), zeros),
                           parallel_iterations=1)
  return total


@contextlib.contextmanager
def accumulation_graph_options(active: bool = True):
  """Runs the body (calls of a training loop that ``accumulate``s) with grappler's arithmetic optimizer off.

  Why: with it on, TensorFlow (2.21, CPU) fails on the second call of an ELECTRA-Small loop whose step
  accumulates in a ``tf.while_loop``: "AlreadyExistsError: Resource __per_step_0/.../AddOpsRewrite_Add_N/
  tmp_var" (the optimizer's rewrite of the gradient sums inside a loop frame; TensorFlow issues #23780,
  #33713, #37740). Off, the same loop runs. The previous setting is restored on exit, so nothing else in the
  process changes; ``active=False`` (no accumulation) leaves the options alone.
  """
  if not active:
    yield
    return
  before = tf.config.optimizer.get_experimental_options().get("arithmetic_optimization", True)
  tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
  try:
    yield
  finally:
    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": before})
