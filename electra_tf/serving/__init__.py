"""Serving: a fine-tuned model exported as a SavedModel that takes raw text (``savedmodel.export_savedmodel``;
command line ``electra-convert export-savedmodel``, see ``docs/interop.md``)."""
