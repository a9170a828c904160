"""The model card (README.md) of a ``transformers`` export: what the model is,
from the checkpoint's own options, how to translate with it, and what of
fairseq-generate it does not carry over."""

# generation_config.json's name for each fairseq-generate option
CONFIG_NAMES = {"beam": "num_beams", "lenpen": "length_penalty", "max_len_b": "max_length",
                "min_len": "min_new_tokens", "max_len_a": "(none)"}


def training_facts(cfg, state) -> dict:
    """What the checkpoint says of its training: task, data, updates, start."""
    task, optimization = cfg["task"], cfg.get("optimization") or {}
    history = state.get("optimizer_history") or [{}]
    checkpointing = cfg.get("checkpoint") or {}
    return {
        "task": task.get("_name"), "data": task.get("data"),
        "updates": history[-1].get("num_updates"),
        "max_update": optimization.get("max_update"),
        "start": checkpointing.get("finetune_from_model") or "random initialisation",
    }


def model_facts(config, args) -> str:
    """'2+2 layers, width 128, 4 heads, FFN 512, gelu, 4016 symbols'."""
    return (f"{config.encoder_layers}+{config.decoder_layers} layers, width {config.d_model}, "
            f"{config.encoder_attention_heads} heads, FFN {config.encoder_ffn_dim}, "
            f"{config.activation_function}, {config.vocab_size} symbols shared by both "
            f"sides, up to {config.max_position_embeddings} positions "
            f"(arch {args.get('arch')}, --embedding-style {args.get('embedding_style')})")


def settings_table(settings, sources, generation) -> str:
    rows = ["| fairseq-generate | generation_config.json | value | from |",
            "| --- | --- | --- | --- |"]
    for name, value in settings.items():
        shown = value
        if name == "max_len_b":
            shown = f"{value} (max_length {generation.max_length}: start token, tokens, </s>)"
        rows.append(f"| --{name.replace('_', '-')} | {CONFIG_NAMES[name]} | {shown} | "
                    f"{sources[name]} |")
    return "\n".join(rows)


USAGE = """```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
from mass_tools.hf.generation import fairseq_processors  # mass_plugin with its [hf] extra

tokenizer = AutoTokenizer.from_pretrained("{directory}")
model = AutoModelForSeq2SeqLM.from_pretrained("{directory}")
batch = tokenizer(["A sentence to translate."], return_tensors="pt", padding=True)
out = model.generate(**batch, logits_processor=fairseq_processors(model))
print(tokenizer.batch_decode(out, skip_special_tokens=True))
```"""

NOT_CARRIED = """- `--max-len-a`: a generation config has no length limit that grows with the
  source. `max_length` is a fixed limit; for another, pass `generate` both
  `max_length=L` and `logits_processor=fairseq_processors(model, L)`.
- The last step: at `max_length` fairseq-generate allows only `</s>` and keeps
  its log-probability. `fairseq_processors(model)` does the same; without it
  a hypothesis that reaches the limit ends without `</s>`. With it, and the
  settings above, `generate` gives fairseq-generate's tokens.
- Padding: BART numbers positions from the first column, so batches must be
  padded on the right (the tokenizer does). fairseq pads sources on the left
  and skips the padding; the positions of the words are the same.
- Preprocessing: the tokenizer applies only the sentencepiece model, as the
  data was segmented. Any other preprocessing of the training text applies
  to inputs too. `<unk>` is kept in the output text, as fairseq writes it.
- {languages}
- Training state: optimizer, scheduler and data order stay in the checkpoint."""


def model_card(facts) -> str:
    """README.md for an export described by ``facts`` (see hf.directory)."""
    src, tgt = facts["direction"]
    train = facts["training"]
    if facts["languages"]:
        languages = (f"Language embeddings ({', '.join(facts['languages'])}): folded into the "
                     f"position tables for {src}->{tgt}. Another direction is another export.")
    else:
        languages = "One direction: the model has no language embeddings."
    lines = [
        "---", f"language: [{src}, {tgt}]", "library_name: transformers",
        "pipeline_tag: translation", "tags: [translation, mass, bart]", "---", "",
        f"# MASS {src}->{tgt}", "",
        f"A `transformer_mass` model (MASS, Song et al., ICML 2019) fine-tuned for {src}->{tgt} "
        "translation, as `transformers`' `BartForConditionalGeneration`: the same "
        "function, weights and vocabulary.", "",
        f"- Direction: {src} -> {tgt}",
        f"- Model: {facts['model']}",
        f"- Training: `--task {train['task']}` on `{train['data']}`, {train['updates']} "
        f"updates (`--max-update {train['max_update']}`), from {train['start']}",
        f"- Checkpoint: `{facts['checkpoint']}`", "",
        "Made with:", "", "```bash", facts["command"], "```", "",
        "## Translate", "",
        USAGE.format(directory=facts["directory"]), "",
        "Written with transformers " + facts["transformers_version"] + ", which has no "
        "`translation` pipeline: use `generate` as above.", "",
        "## Decoding settings", "",
        settings_table(facts["settings"], facts["sources"], facts["generation"]), "",
        "Also set: `suppress_tokens=[<pad>]`, no `forced_eos_token_id`, and with more "
        "than one beam `early_stopping=True` (a sentence is done with `num_beams` finished "
        "hypotheses, as in fairseq); give it with `num_beams` to a greedy export.",
        "", "## What is not carried over", "",
        NOT_CARRIED.format(languages=languages), "",
    ]
    return "\n".join(lines)
