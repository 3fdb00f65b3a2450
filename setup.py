"""electra-tf: a TensorFlow 2 / Keras reproduction of ELECTRA, faithful to google-research/electra."""

import pathlib

import setuptools

HERE = pathlib.Path(__file__).parent


def _requirements(name):
  lines = (HERE / name).read_text().splitlines()
  return [l.strip() for l in lines if l.strip() and not l.startswith(("#", "-r"))]


# 2.77 resolves with tensorflow 2.21 / tensorflow-text 2.21 (it pins protobuf < 7; TF 2.21 takes 6.31+).
BEAM_REQUIREMENT = "apache-beam==2.77.*"

setuptools.setup(
    name="electra-tf",
    version="0.1.0",
    description="ELECTRA pre-training and fine-tuning in TensorFlow 2 / Keras 3",
    long_description=(HERE / "README.md").read_text() if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=setuptools.find_packages(include=["electra_tf", "electra_tf.*"]),
    install_requires=_requirements("requirements.txt"),
    extras_require={
        "test": _requirements("requirements-test.txt"),
        # Building the pre-training data as an Apache Beam pipeline (build_pretraining_dataset.py --runner:
        # Dataflow, Spark, Flink, DirectRunner); optional, imported only by pretrain_data/beam_pipeline.py.
        "beam": [BEAM_REQUIREMENT],
    },
    # The same commands as the reference-style scripts (pretrain/, finetune/, data_prep/, python -m
    # electra_tf.convert), which call these functions too.
    entry_points={"console_scripts": [
        "electra-build-vocab=electra_tf.cli.build_vocab:main",
        "electra-build-data=electra_tf.cli.build_data:main",
        "electra-pretrain=electra_tf.cli.pretrain:main",
        "electra-finetune=electra_tf.cli.finetune:main",
        "electra-convert=electra_tf.cli.convert:main",
    ]},
)
