"""Export of a fine-tuned ``transformer_mass`` model to Hugging Face
``transformers`` (``python -m mass_tools.export --transformers DIR``), and the
generation setting that gives fairseq-generate's tokens there
(:mod:`mass_tools.hf.generation`). Nothing here is imported by the plugin
itself: ``transformers`` is an optional extra (``pip install .[hf]``)."""
