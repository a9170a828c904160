"""The tools around the plugin: preparing text for it, and looking at what it wrote.

Each tool is a module run as ``python -m mass_tools.NAME`` or as the console
command ``pip install`` puts on PATH (``mass_tools/commands.py``):

Preparing data (the general pipeline, raw text to fairseq's binarized files):
  tokenize_moses     mass-tokenize          Moses normalisation and tokenisation
  learn_subwords     mass-learn-subwords    one joint sentencepiece / BPE model
  apply_subwords     mass-apply-subwords    text -> subwords with that model
  binarize           mass-binarize          monolingual and parallel sets, ONE dictionary
  data_bin_record    mass-check-data-bin    each binarized file read with its own dictionary
  select_in_domain   mass-select-in-domain  in-domain lines of a general corpus
  fetch_wmt          mass-fetch-wmt         WMT News Crawl and a newstest set
  download           mass-download          resumable, checked download of one file
  sample_pairs       mass-sample-pairs      seeded, nested samples of a parallel corpus
  extract_xsum       mass-extract-xsum      XSum's articles and summaries by split
  tokens_per_update  mass-tokens-per-update predicted span tokens per MASS update

Looking at outputs, and serving:
  output_stats       mass-output-stats      output language, repetition, length
  score_rouge        mass-score-rouge       ROUGE-1/2/L of summaries
  translate_ct2      mass-translate-ct2     translate with a CTranslate2 export
  export             mass-export            a checkpoint as stock fairseq, CTranslate2
                                            and Hugging Face transformers (hf/)

``textio`` is their shared line reading and atomic writing. ``python -m
mass_tools`` prints this list.
"""
