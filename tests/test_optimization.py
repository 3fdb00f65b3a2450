"""The reference's optimizer pieces (``optimization.py``) as the pre-training loop uses them."""

import math

import numpy as np
import pytest
import tensorflow as tf

from conftest import require_module, run_on_two_logical_cpus


def test_learning_rate_schedule_hand_computed():
  from electra_tf.optimization import learning_rate_schedule
  lr = learning_rate_schedule(1e-3, num_train_steps=100, num_warmup_steps=10)
  assert float(lr(0)) == 0.0
  assert float(lr(5)) == pytest.approx(1e-3 * (1 - 0.05) * 0.5)  # warmup multiplies the decay
  assert float(lr(50)) == pytest.approx(1e-3 * 0.5)
  assert float(lr(100)) == pytest.approx(0.0)


@pytest.mark.parametrize("mode", ["xla", "graph", "graph_accumulation_options"])
def test_settable_schedule_equals_the_constant_schedule_in_a_compiled_step(mode):
  """``SettableSchedule`` (peak LR and length in variables, so a compiled step serves any) gives the learning
  rates of ``ReferenceSchedule`` with those values as constants, bit for bit, under XLA and in a graph (also with
  the graph options gradient accumulation runs under); after ``set`` those of the new values. Its variables are
  not the optimizer's (a trainer's reset zeroes those)."""
  import contextlib
  from electra_tf.optimization import (ReferenceSchedule, SettableSchedule, accumulation_graph_options,
                                       create_optimizer)
  settable = SettableSchedule(1e-3, 160, warmup_proportion=0.1)
  for lr, steps, proportion in [(1e-3, 160, 0.1), (3e-4, 219, 0.1), (1e-4, 1000, 0.1), (1e-3, 37, 0.1),
                                (3e-4, 617, 0.06)]:
    settable.set(lr, steps, warmup_proportion=proportion)
    constant = ReferenceSchedule(lr, steps, warmup_proportion=proportion)
    every_step = tf.range(steps + 2, dtype=tf.int64)
    values = {}
    for name, schedule in (("settable", settable), ("constant", constant)):
      fn = tf.function(lambda s, schedule=schedule: tf.map_fn(schedule, s, fn_output_signature=tf.float32),
                       jit_compile=mode == "xla")
      with accumulation_graph_options() if mode == "graph_accumulation_options" else contextlib.nullcontext():
        values[name] = fn(every_step).numpy()
    np.testing.assert_array_equal(values["settable"], values["constant"], err_msg=f"{lr} {steps} {proportion}")
    assert values["settable"][0] == 0.0 and abs(values["settable"][-1]) < 1e-9  # ends at 0 (to rounding)
    assert values["settable"].max() == pytest.approx(lr * (1 - 0.1), rel=0.15)
  with pytest.raises(ValueError, match="made with a warmup"):
    settable.set(1e-3, 100)
  optimizer = create_optimizer(1e-3, 100, warmup_proportion=0.1, settable_schedule=True)
  import keras
  optimizer.build([keras.Variable([1.0, 2.0])])
  schedule_vars = {id(v) for v in (optimizer._learning_rate._peak, optimizer._learning_rate._steps)}  # pylint: disable=protected-access
  assert not schedule_vars & {id(v) for v in optimizer.variables}


def test_adam_without_bias_correction_and_weight_decay_exclusion():
  from electra_tf.optimization import AdamWeightDecay, clip_by_global_norm
  import keras
  kernel = keras.Variable([1.0, -2.0])
  gamma = keras.Variable([0.5, 0.5])
  bias = keras.Variable([0.1, 0.2])
  names = {id(kernel): "electra/encoder/layer_0/output/dense/kernel",
           id(gamma): "electra/encoder/layer_0/output/LayerNorm/gamma",
           id(bias): "electra/encoder/layer_0/output/dense/bias"}
  opt = AdamWeightDecay(0.1, weight_decay_rate=0.01, variable_names=names)
  variables = [kernel, gamma, bias]
  ref = {id(v): v.numpy().copy() for v in variables}
  m = {id(v): np.zeros(2) for v in variables}
  s = {id(v): np.zeros(2) for v in variables}
  grads_seq = [[np.array([0.3, -0.4]), np.array([1.0, 2.0]), np.array([-0.5, 0.5])],
               [np.array([3.0, 4.0]), np.array([0.1, 0.1]), np.array([0.2, -0.2])]]
  for grads in grads_seq:
    clipped, norm = clip_by_global_norm([tf.constant(g, tf.float32) for g in grads], 1.0)
    gnorm = math.sqrt(sum((g ** 2).sum() for g in grads))
    assert float(norm) == pytest.approx(gnorm, rel=1e-5)
    opt.apply(clipped, variables)
    for v, g in zip(variables, grads):
      g = g * min(1.0, 1.0 / gnorm)
      m[id(v)] = 0.9 * m[id(v)] + 0.1 * g
      s[id(v)] = 0.999 * s[id(v)] + 0.001 * g * g
      update = m[id(v)] / (np.sqrt(s[id(v)]) + 1e-6)  # no bias correction
      if v is kernel:
        update += 0.01 * ref[id(v)]  # decoupled decay, not for LayerNorm or bias
      ref[id(v)] = ref[id(v)] - 0.1 * update
  for v in variables:
    np.testing.assert_allclose(v.numpy(), ref[id(v)], rtol=1e-5, atol=1e-6)


def test_bias_correction_matches_torch_adam():
  """``bias_correction=True`` is Adam's update exactly (torch.optim.Adam as the independent reference)."""
  torch = require_module("torch")
  import keras
  from electra_tf.optimization import AdamWeightDecay
  rng = np.random.default_rng(0)
  init = rng.normal(size=[5, 3]).astype(np.float32)
  grads = [rng.normal(size=[5, 3]).astype(np.float32) for _ in range(12)]
  var = keras.Variable(init)
  ours = AdamWeightDecay(1e-2, weight_decay_rate=0.0, epsilon=1e-6, bias_correction=True)
  ours.build([var])
  ref = torch.nn.Parameter(torch.tensor(init))
  theirs = torch.optim.Adam([ref], lr=1e-2, betas=(0.9, 0.999), eps=1e-6)
  plain_var = keras.Variable(init)
  plain = AdamWeightDecay(1e-2, weight_decay_rate=0.0, epsilon=1e-6)
  plain.build([plain_var])
  for g in grads:
    ours.apply([tf.constant(g)], [var])
    plain.apply([tf.constant(g)], [plain_var])
    ref.grad = torch.tensor(g)
    theirs.step()
  np.testing.assert_allclose(var.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
  # the reference's update differs: its first steps are (1 - 0.9^k) / sqrt(1 - 0.999^k) of Adam's
  assert np.abs(plain_var.numpy() - var.numpy()).max() > 1e-3


def test_a_later_optimizer_calls_the_update_already_traced_for_its_shapes():
  """Each variable's update is traced once per shape and setting in a process: an optimizer built later (the
  next trainer of a search or a test) adds none, and updates its variables exactly as the first did."""
  import keras
  from electra_tf import optimization
  from electra_tf.optimization import AdamWeightDecay
  rng = np.random.default_rng(3)
  init = [rng.normal(size=s).astype(np.float32) for s in ([4, 3], [3])]
  grads = [tf.constant(rng.normal(size=v.shape).astype(np.float32)) for v in init]

  def train_once():
    variables = [keras.Variable(v) for v in init]
    opt = AdamWeightDecay(0.1, weight_decay_rate=0.01, variable_names={id(variables[1]): "dense/bias"})
    opt.build(variables)
    tf.function(lambda: opt.apply(grads, variables))()
    return [v.numpy() for v in variables]

  first = train_once()
  traced = optimization._adam_update.experimental_get_tracing_count()  # pylint: disable=protected-access
  assert traced > 0
  second = train_once()
  assert optimization._adam_update.experimental_get_tracing_count() == traced  # pylint: disable=protected-access
  for a, b in zip(first, second):
    np.testing.assert_array_equal(a, b)


def test_apply_if_false_keeps_weights_and_slots_and_counts_the_step():
  """``apply_if`` (the float16 loss scale's skipped step): false leaves the weights and Adam's slots as they
  are, even with a non-finite gradient, and advances ``iterations``; true equals ``apply`` bit for bit."""
  import keras
  from electra_tf.optimization import AdamWeightDecay

  def make():
    w = keras.Variable([1.0, -2.0], name="w")
    opt = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01)
    opt.build([w])
    return w, opt

  # pylint: disable-next=protected-access
  state = lambda w, opt: [x.numpy().tolist() for x in (w, *opt._adam_m, *opt._adam_v)]
  w, opt = make()
  opt.apply([tf.constant([0.5, 0.25])], [w])
  w_if, opt_if = make()
  opt_if.apply_if(tf.constant(True), [tf.constant([0.5, 0.25])], [w_if])
  before = state(w_if, opt_if)
  assert before == state(w, opt) and before[0] != [1.0, -2.0]
  opt_if.apply_if(tf.constant(False), [tf.constant([np.inf, np.nan])], [w_if])
  assert state(w_if, opt_if) == before
  assert int(opt_if.iterations.numpy()) == 2
  clipping = AdamWeightDecay(learning_rate=0.1, global_clipnorm=1.0)
  with pytest.raises(ValueError, match="apply_if does not apply Keras's global_clipnorm; use apply"):
    clipping.apply_if(tf.constant(True), [tf.constant([0.5, 0.25])], [keras.Variable([1.0, -2.0], name="u")])


def test_under_two_replicas_the_optimizer_sums_the_gradients_unless_the_caller_did():
  """Two logical CPUs, in a process of its own, replica 0's gradient zero and replica 1's nonzero.

  As Keras's optimizers (``model.fit`` hands each replica's gradient to ``apply``), ``apply`` sums them over
  the replicas: both mirrored copies move alike. With ``gradients_summed`` (the replica step sums them itself,
  one all-reduce per step) each copy moves by its own replica's gradient. Then both ways of updating, Keras's
  per variable and one XLA function per device (``compile_per_device``), with and without bias correction,
  through ``apply_if`` as the float16 loss scale calls it: a step, a skipped step with non-finite gradients,
  and a third step (bias correction's t = 3); the two ways agree."""
  body = ("import keras\n"
          "import tensorflow as tf\n"
          "from electra_tf.optimization import AdamWeightDecay\n"
          "strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])\n"
          "out = {}\n"
          "for summed, compiled, bias_correction in [(False, False, False), (True, False, False),\n"
          "                                          (True, True, False), (True, False, True), (True, True, True)]:\n"
          "  with strategy.scope():\n"
          "    w, b = keras.Variable([1.0, 1.0], name='w'), keras.Variable([0.5, -0.5], name='bias')\n"
          "    opt = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.1, bias_correction=bias_correction)\n"
          "    opt.build([w, b])\n"
          "  opt.gradients_summed, opt.compile_per_device = summed, compiled\n"
          "  def replica(apply):\n"
          "    r = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)\n"
          "    grads = [r * tf.constant([1.0, -1.0]), r * tf.constant([2.0, 3.0])]\n"
          "    bad = tf.constant([float('inf'), float('nan')])\n"
          "    opt.apply_if(apply, [tf.where(apply, g, bad) for g in grads], [w, b])\n"
          "  step = tf.function(lambda apply: strategy.run(replica, args=(apply,)))\n"
          "  copies = lambda: [[x.numpy().tolist() for x in strategy.experimental_local_results(v.value)]\n"
          "                    for v in (w, b)]\n"
          "  step(tf.constant(True))\n"
          "  first = copies()\n"
          "  step(tf.constant(False))\n"
          "  skipped = copies()\n"
          "  step(tf.constant(True))\n"
          "  traced = opt._device_update.experimental_get_tracing_count()\n"
          "  out[(summed, compiled, bias_correction)] = [first, skipped, copies(), int(opt.iterations.numpy()),\n"
          "                                              traced]\n"
          "print(out)\n")
  runs = eval(run_on_two_logical_cpus(body))  # pylint: disable=eval-used  (a dict the body printed)

  def adam(g, bias_correction):  # lr * m / (sqrt(v) + eps) after one step from zero slots
    m, v = 0.1 * g, 0.001 * g * g
    if bias_correction:
      m, v = m / 0.1, v / 0.001
    return 0.1 * m / (math.sqrt(v) + 1e-6)

  def expected(g_w, g_b, bias_correction):  # one step's copies of w (decay 0.1 * w) and the bias (no decay)
    return [[1.0 - adam(g, bias_correction) - 0.1 * 0.1 * 1.0 for g in g_w], [x - adam(g, bias_correction)
                                                                             for x, g in zip([0.5, -0.5], g_b)]]

  summed_w, summed_b = expected([1.0, -1.0], [2.0, 3.0], False)  # the sum is replica 1's gradient
  np.testing.assert_allclose(runs[(False, False, False)][0], [[summed_w] * 2, [summed_b] * 2], rtol=1e-6)
  for bias_correction in (False, True):
    per_variable, compiled = runs[(True, False, bias_correction)], runs[(True, True, bias_correction)]
    replica0, replica1 = expected([0.0, 0.0], [0.0, 0.0], bias_correction), expected([1.0, -1.0], [2.0, 3.0],
                                                                                     bias_correction)
    for first, skipped, _, iterations, _ in (per_variable, compiled):  # float32's 1 - 0.9: 7e-7 off the float64
      np.testing.assert_allclose(first[0], [replica0[0], replica1[0]], rtol=1e-6, atol=1e-6)
      np.testing.assert_allclose(first[1], [replica0[1], replica1[1]], rtol=1e-6, atol=1e-6)
      assert skipped == first and iterations == 3
    assert per_variable[4] == 0 and compiled[4] == 2  # traced once for each device
    np.testing.assert_allclose(compiled[2], per_variable[2], rtol=1e-6, atol=1e-7)
    assert compiled[2] != compiled[0]


def test_keras_fit_on_two_replicas_trains_like_one_device():
  """``model.fit`` with ``AdamWeightDecay`` (as ``keras_encoder.layerwise_optimizer`` gives it) on two replicas:
  Keras hands each replica's own gradient to the optimizer, which sums them, so both copies of every weight stay
  equal and equal one device's. Two logical CPUs, in a process of its own."""
  body = ("import keras, numpy as np\n"
          "import tensorflow as tf\n"
          "from electra_tf.optimization import AdamWeightDecay\n"
          "rng = np.random.default_rng(0)\n"
          "x, y = rng.normal(size=(16, 4)).astype('float32'), rng.normal(size=(16, 1)).astype('float32')\n"
          "init = [rng.normal(size=(4, 1)).astype('float32'), np.zeros(1, 'float32')]\n"
          "def fit(strategy):\n"
          "  with strategy.scope():\n"
          "    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
          "    model.compile(optimizer=AdamWeightDecay(0.1, weight_decay_rate=0.01), loss='mse')\n"
          "  model.set_weights(init)\n"
          "  model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)\n"
          "  local = strategy.experimental_local_results\n"
          "  return [[c.numpy().tolist() for c in local(v.value)] for v in model.weights]\n"
          "print([fit(tf.distribute.OneDeviceStrategy('/cpu:0')),\n"
          "       fit(tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']))])\n")
  one, two = eval(run_on_two_logical_cpus(body))  # pylint: disable=eval-used  (lists the body printed)
  for (single,), copies in zip(one, two):
    assert len(copies) == 2 and copies[0] == copies[1]
    np.testing.assert_allclose(copies[0], single, rtol=1e-6, atol=1e-6)
