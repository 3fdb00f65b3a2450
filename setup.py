"""Build configuration lives in pyproject.toml. This file remains for tools that still ask for a setup.py,
e.g. Apache Beam's ``--setup_file ./setup.py`` on Dataflow (docs/data.md)."""

import setuptools

setuptools.setup()
