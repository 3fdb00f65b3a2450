"""The shared runtime (``runtime/``): atomic outputs, TensorBoard scalars read back, strategy choice."""

import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf import reporting, runtime
from electra_tf.configs import FinetuningConfig, PretrainingConfig
from electra_tf.errors import ElectraError, OutputExistsError, OutputPathError


def test_atomic_write_replaces_whole_files_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
  path = tmp_path / "sub" / "results.json"
  runtime.atomic_write(str(path), "first")
  runtime.atomic_write(str(path), b"second")
  assert path.read_text() == "second"

  real_fdopen = os.fdopen

  def fdopen_that_fails_on_write(*args, **kwargs):
    f = real_fdopen(*args, **kwargs)
    f.write = lambda data: (_ for _ in ()).throw(OSError("disk full"))
    return f

  monkeypatch.setattr(os, "fdopen", fdopen_that_fails_on_write)
  with pytest.raises(OSError, match="disk full"):
    runtime.atomic_write(str(path), "third")
  monkeypatch.undo()
  assert path.read_text() == "second"  # the old file is intact and no temporary is left behind
  assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]


def test_atomic_output_writes_through_links_and_devices_and_gives_the_umask_s_mode(tmp_path):
  target = tmp_path / "target.jsonl"
  target.write_text("old\n")
  link = tmp_path / "link.jsonl"
  link.symlink_to(target)
  with runtime.atomic_output(str(link), through_links=True) as f:
    f.write("new\n")
  assert link.is_symlink() and target.read_text() == "new\n"  # the link stays, its target is replaced
  other = tmp_path / "other_link"
  other.symlink_to(target)
  runtime.atomic_write(str(other), "own file")  # without through_links the link itself is replaced
  assert not other.is_symlink() and other.read_text() == "own file" and target.read_text() == "new\n"
  other.unlink()
  previous = os.umask(0o027)
  try:
    with runtime.atomic_output(str(tmp_path / "fresh.txt")) as f:
      f.write("x")
    os.chmod(target, 0o600)
    with runtime.atomic_output(str(target)) as f:
      f.write("y")
  finally:
    os.umask(previous)
  assert (tmp_path / "fresh.txt").stat().st_mode & 0o777 == 0o640  # 0o666 less the umask, as open() gives
  assert target.stat().st_mode & 0o777 == 0o600  # a replaced file keeps its mode
  with runtime.atomic_output(os.devnull) as f:  # a device is written, never replaced
    f.write("discarded")
  assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
  fifo = tmp_path / "pipe"
  os.mkfifo(fifo)
  read = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
  with runtime.atomic_output(str(fifo)) as f:
    f.write("through the pipe\n")
  assert read.communicate(timeout=30)[0] == "through the pipe\n" and fifo.is_fifo()
  piped = subprocess.run([sys.executable, "-c", "from electra_tf.runtime import atomic_output\n"
                          "with atomic_output('/dev/stdout') as f: f.write('to the pipe')"],
                         capture_output=True, text=True, check=True, timeout=120)
  assert piped.stdout == "to the pipe"  # /dev/stdout is a pipe here: written, not replaced
  with pytest.raises(RuntimeError):
    with runtime.atomic_output(str(target)) as f:
      f.write("half")
      raise RuntimeError("interrupted")
  assert target.read_text() == "y"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "link.jsonl", "pipe", "target.jsonl"]


def test_a_command_stopped_by_a_signal_exits_128_plus_the_signal():
  import signal
  from electra_tf.cli.common import run_cli

  def stopped_job(sig):
    with runtime.stop_requests() as stop:
      os.kill(os.getpid(), sig)
      assert stop.signal == sig  # the job saves its checkpoint and returns normally

  assert run_cli(lambda: stopped_job(signal.SIGTERM)) == 143
  assert run_cli(lambda: stopped_job(signal.SIGINT)) == 130
  assert run_cli(lambda: None) == 0  # a signal an earlier job of the process caught does not count
  assert run_cli(lambda: (_ for _ in ()).throw(ElectraError("bad input"))) == 2
  assert runtime.stop_signals_caught()[-2:] == (signal.SIGTERM, signal.SIGINT)


def test_atomic_directory_swaps_in_complete_outputs_only(tmp_path):
  dest = tmp_path / "model"
  with runtime.atomic_directory(dest) as tmp:
    assert not dest.exists()  # nothing at the destination until the block completes
    open(os.path.join(tmp, "a.txt"), "w").write("1")
  assert (dest / "a.txt").read_text() == "1"
  with pytest.raises(OutputExistsError, match="already exists; pass --overwrite"):
    runtime.atomic_directory(dest)
  with pytest.raises(RuntimeError):
    with runtime.atomic_directory(dest, overwrite=True) as tmp:
      open(os.path.join(tmp, "b.txt"), "w").write("2")
      raise RuntimeError("interrupted")
  assert sorted(os.listdir(dest)) == ["a.txt"]  # the old output survives a failed replacement
  assert sorted(os.listdir(tmp_path)) == ["model"]  # and no temporary is left behind
  with runtime.atomic_directory(dest, overwrite=True) as tmp:
    open(os.path.join(tmp, "b.txt"), "w").write("2")
  assert sorted(os.listdir(dest)) == ["b.txt"]
  assert issubclass(OutputExistsError, ElectraError)


def test_scalars_read_back_with_their_tags_steps_and_values(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  runtime.write_scalars(writer, 10, {"loss": 2.5, "disc_auc_real": 0.75, "note": "skipped", "flag": True})
  runtime.write_scalars(writer, 20, {"loss": 1.5}, prefix="eval/")
  runtime.write_scalars(None, 30, {"loss": 0.0})  # no writer: nothing happens
  writer.flush()
  curves = reporting.read_scalars(str(tmp_path))
  assert curves == {"loss": [(10, 2.5)], "disc_auc_real": [(10, 0.75)], "eval/loss": [(20, 1.5)]}


def test_format_duration():
  assert runtime.format_duration(247) == "4m07s"
  assert runtime.format_duration(3900) == "1h05m"
  assert runtime.format_duration(float("inf")) == "?"


@pytest.mark.parametrize("config_cls", [PretrainingConfig, FinetuningConfig])
def test_both_jobs_select_their_strategy_from_the_shared_runtime_fields(config_cls, monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  cfg = config_cls.create("m", "/nonexistent", strategy="auto")
  strategy = runtime.select_strategy(cfg)
  assert isinstance(strategy, tf.distribute.OneDeviceStrategy)  # no GPU here, no TF_CONFIG cluster
  assert runtime.is_chief(strategy)
  monkeypatch.setenv("TF_CONFIG", "{not json")
  with pytest.raises(ElectraError, match="TF_CONFIG is not valid JSON"):
    runtime.select_strategy(cfg)


def test_jobs_of_one_process_share_their_mirrored_strategy():
  """Two jobs in one process (the main job pre-trains, then fine-tunes) on two replicas: each all-reduces its
  own tensors. Two MirroredStrategy objects would start their collective keys alike, and the second job's
  all-reduce would fail ("Shape mismatch in the collective instance 100"). Two logical CPUs, in a process of
  its own."""
  from conftest import run_on_two_logical_cpus
  body = ("import tensorflow as tf\n"
          "from electra_tf import runtime\n"
          "from electra_tf.configs import FinetuningConfig, PretrainingConfig\n"
          "def job(config_cls, width):\n"
          "  strategy = runtime.select_strategy(config_cls.create('m', '/nonexistent', strategy='mirrored'))\n"
          "  def replica():\n"
          "    ctx = tf.distribute.get_replica_context()\n"
          "    return ctx.all_reduce('sum', [tf.ones([width]), tf.ones([3])])\n"
          "  out = tf.function(lambda: strategy.run(replica))()\n"
          "  return strategy, [float(tf.reduce_sum(strategy.experimental_local_results(t)[1])) for t in out]\n"
          "first, sums = job(PretrainingConfig, 5)\n"
          "second, more = job(FinetuningConfig, 7)\n"
          "print(first is second, first.num_replicas_in_sync, sums, more)\n")
  assert run_on_two_logical_cpus(body) == "True 2 [10.0, 6.0] [14.0, 6.0]"


def test_check_writable_names_the_problem_before_the_work(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("x")
  runtime.check_writable(str(tmp_path / "new" / "deeper" / "vocab.txt"))  # directories are created later
  runtime.check_writable(str(tmp_path), directory=True)
  runtime.check_writable("gs://bucket/model", directory=True)  # remote: left to the job
  cases = [
      (dict(path=str(tmp_path / "new" / "vocab.txt"), create_parents=False),
       f"directory {tmp_path / 'new'} does not exist; create it (mkdir -p {tmp_path / 'new'})"),
      (dict(path=str(blocker / "sub" / "x")), f"{blocker} is a file, not a directory"),
      (dict(path=str(blocker), directory=True), "a file is in the way"),
      (dict(path=str(tmp_path)), "it is a directory; name a file"),
  ]
  for kwargs, message in cases:
    with pytest.raises(OutputPathError, match=re.escape(message)):
      runtime.check_writable(what="thing", **kwargs)
  assert issubclass(OutputPathError, ElectraError) and issubclass(OutputPathError, OSError)
  runtime.atomic_write(str(tmp_path / "shared.txt"), "x")
  assert (tmp_path / "shared.txt").stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0600


def _creates_files_in(directory) -> bool:
  """Whether this process can create a file in ``directory`` (tried, then removed)."""
  path = os.path.join(directory, f".probe_{os.getpid()}")
  try:
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
  except OSError:
    return False
  os.remove(path)
  return True


def test_an_unwritable_directory_is_refused_before_the_work(tmp_path):
  """A directory mode 555; run as root, mode bits do not stop the process, so sysfs (where no process
  creates files) stands in for it."""
  read_only = tmp_path / "read_only"
  read_only.mkdir()
  read_only.chmod(0o555)
  try:
    target = str(read_only) if not _creates_files_in(read_only) else "/sys"
    if _creates_files_in(target) or not os.path.isdir(target):
      pytest.skip("no directory here refuses new files: running as root, and /sys is absent or writable")
    with pytest.raises(OutputPathError, match=re.escape(f"{target} is not writable")):
      runtime.check_writable(os.path.join(target, "out"), directory=True)
    with pytest.raises(OutputPathError, match=re.escape(f"{target} is not writable")):
      runtime.check_writable(os.path.join(target, "new", "model.ckpt"))
  finally:
    read_only.chmod(0o755)


def test_a_checkpoint_that_does_not_fit_is_one_line_without_tensorflow_noise(tmp_path, capfd):
  """A TF2 pre-training checkpoint of another size: our one line, none of TensorFlow's hundreds of
  "Value in checkpoint could not be found" warnings (they come when the failed restore is collected)."""
  import gc
  import logging
  from conftest import TINY_MODEL
  from electra_tf.cli.common import run_cli
  from electra_tf.convert import load_pretrained_weights
  from electra_tf.modeling import ElectraEncoder, build_pretraining_networks
  tiny = PretrainingConfig.create(model_hparam_overrides=dict(TINY_MODEL), embedding_size=32, vocab_size=100)
  nets = build_pretraining_networks(tiny)
  prefix = tf.train.Checkpoint(discriminator=nets.discriminator, generator=nets.generator).write(
      str(tmp_path / "ckpt-1"))
  wider = PretrainingConfig.create(model_hparam_overrides=dict(TINY_MODEL, hidden_size=64), embedding_size=32,
                                   vocab_size=100)
  encoder = ElectraEncoder(wider.discriminator_config(), name="electra")
  encoder.dummy_build()
  warnings = logging.Handler()  # TensorFlow's handler writes to the stderr of its creation, not capfd's
  warnings.emit = lambda record: noise.append(record.getMessage())
  tf.get_logger().addHandler(warnings)
  capfd.readouterr()
  try:
    for target in (encoder, build_pretraining_networks(wider)):  # restored by name, and by structure
      noise = []
      assert run_cli(lambda: load_pretrained_weights(prefix, target)) == 2
      gc.collect()  # as at exit: whatever still holds the failed restore is gone
      err = capfd.readouterr().err.strip().splitlines()
      assert len(err) == 1 and err[0].startswith(f"error: {prefix} does not fit"), err[:3]
      assert not noise, noise[:3]
    same = build_pretraining_networks(tiny)
    report = load_pretrained_weights(prefix, same)  # a fitting one still loads
    assert "electra/encoder/layer_0/attention/self/query/kernel" in report.loaded
    assert not noise, noise[:3]
  finally:
    tf.get_logger().removeHandler(warnings)


def test_fine_tuning_checks_its_model_directory_before_reading_data(tmp_path, capsys, bert_vocab):
  from finetune.run_finetuning import main  # pylint: disable=g-import-not-at-top
  blocker = tmp_path / "a_file"
  blocker.write_text("x")
  argv = ["--data-dir", str(blocker), "--model-name", "tiny", "--task", "rte", "--init-checkpoint", "none",
          "--hparams", f'{{"vocab_file": "{bert_vocab}"}}']
  assert main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [f"error: cannot write the model directory {blocker / 'models' / 'tiny'}: {blocker} is a file, "
                 "not a directory; choose another path"]


def test_lazy_summary_writer_creates_its_events_file_with_the_first_scalar(tmp_path):
  from electra_tf import reporting, runtime
  logdir = tmp_path / "train"
  writer = runtime.LazySummaryWriter(str(logdir))
  writer.flush()  # nothing written yet: a run that fails here leaves no events file
  assert not logdir.exists()
  runtime.write_scalars(writer, 3, {"loss": 1.5})
  writer.flush()
  assert len(list(logdir.glob("events.out.tfevents.*"))) == 1
  assert reporting.read_scalars(str(logdir))["loss"] == [(3, 1.5)]


def test_use_xla_auto_is_off_on_a_cpu_and_on_with_the_gemm_flag_on_a_gpu(monkeypatch):
  """``use_xla`` null picks the fast path for the devices: off on a CPU; on where the strategy holds a GPU, with
  the project's XLA_FLAGS unless the user set the variable. An explicit true or false is kept."""
  from electra_tf.runtime import devices
  cpu = tf.distribute.OneDeviceStrategy("/cpu:0")
  cfg = PretrainingConfig.create(model_name="m", data_dir="d")
  assert cfg.use_xla is None
  assert devices.xla_choice(cfg, cpu) == (False, "auto: no GPU (set use_xla true to compile on a CPU)")
  has_gpu = bool(tf.config.list_physical_devices("GPU"))  # the default strategy: this process's devices
  assert devices.xla_choice(cfg, tf.distribute.get_strategy())[0] is has_gpu

  class OnGpu:  # the one thing xla_choice reads of a strategy
    class extended:
      worker_devices = ("/job:localhost/replica:0/task:0/device:GPU:0",)
  monkeypatch.delenv("XLA_FLAGS", raising=False)
  use, why = devices.xla_choice(cfg, OnGpu)
  assert use and os.environ["XLA_FLAGS"] == devices.GPU_XLA_FLAGS
  assert why == (f"auto: a GPU is present; XLA_FLAGS={devices.GPU_XLA_FLAGS} (the project's; set XLA_FLAGS to "
                 "choose others)")
  monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=0")
  use, why = devices.xla_choice(cfg, OnGpu)
  assert use and os.environ["XLA_FLAGS"] == "--xla_gpu_autotune_level=0" and "as set" in why
  cfg.use_xla = False
  assert devices.xla_choice(cfg, OnGpu) == (False, "use_xla false")
  cfg.use_xla = True
  assert devices.xla_choice(cfg, cpu) == (True, "use_xla true")


def test_the_commands_set_the_xla_flags_before_tensorflow_starts_unless_the_user_did():
  """XLA reads XLA_FLAGS once: the command lines set the project's flags when they load, before TensorFlow is
  imported, and keep the user's; XLA on a CPU runs with them (they concern the GPU back end only, and XLA
  aborts on a flag it does not know: this TensorFlow's XLA knows each). Code generation runs on every core the
  process may use."""
  code = ("import os, sys\n"
          "import electra_tf.cli\n"
          "assert 'tensorflow' not in sys.modules\n"
          "print(os.environ['XLA_FLAGS'])\n"
          "import tensorflow as tf\n"
          "print(float(tf.function(lambda x: tf.reduce_sum(x * 2.0), jit_compile=True)(tf.ones([3]))))\n")
  env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
  assert out.splitlines() == [runtime.GPU_XLA_FLAGS, "6.0"]
  assert runtime.GPU_XLA_FLAGS.split() == [
      "--xla_gpu_enable_triton_gemm=false", "--xla_gpu_enable_llvm_module_compilation_parallelism=true",
      f"--xla_gpu_force_compilation_parallelism={len(os.sched_getaffinity(0))}"]
  env["XLA_FLAGS"] = "--xla_gpu_autotune_level=0"
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
  assert out.splitlines() == ["--xla_gpu_autotune_level=0", "6.0"]


def test_a_stop_signal_during_the_last_compiled_loop_still_stops_the_job():
  """A signal that arrives while the last loop runs is not lost: the job saves and says it stopped, so a
  fine-tuning run does not go on to its next trial."""
  import signal
  from electra_tf.runtime import controller
  step_var, saved, lines = tf.Variable(0, dtype=tf.int64), [], []

  def loop(iterator, n):
    step_var.assign_add(n)
    if int(step_var.numpy()) == 10:
      os.kill(os.getpid(), signal.SIGTERM)
    return {}, tf.constant(n), tf.constant(-1)

  host = controller.Controller(loop, step_var, 5, [], save=saved.append, saved_at=lambda s: False,
                               latest=lambda: None)
  assert host.run(None, 10, log_fn=lines.append, where=" in trial 1") == "interrupted"
  assert saved == [10] and host.stop_signal == signal.SIGTERM
  assert lines == ["stopped by signal 15 in trial 1 at step 10; checkpoint saved, rerun the same command to resume"]
