"""A package's names imported from its modules on first use (PEP 562), so importing the package itself
loads none of them: ``__getattr__, __dir__ = lazy_exports(__name__, {name: module, ...})``."""

import importlib
import typing


def lazy_exports(package: str, module_of: typing.Mapping[str, str]):
  """(``__getattr__``, ``__dir__``) for ``package``: each name of ``module_of`` is read from
  ``<package>.<module>`` when first asked for."""
  def __getattr__(name):  # pylint: disable=invalid-name
    if name in module_of:
      return getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")

  def __dir__():  # pylint: disable=invalid-name
    return sorted(set(vars(importlib.import_module(package))) | set(module_of))

  return __getattr__, __dir__
