"""python -m mass_tools.export --transformers: the model as transformers' BART,
computing what the fairseq model computes, its tokenizer giving the binarized
ids, and generate() choosing fairseq-generate's tokens.

The fast tests build tiny models in this process; the slow ones export the
quickstart's model (the session's ``quickstart`` fixture) and compare with
fairseq-generate run in this process on the bundled test set."""

import io
import math
import re
from argparse import Namespace

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import ARCH_CONFIG_REGISTRY
from fairseq_cli import generate as fairseq_generate

from conftest import PLUGIN_DIR, REPO, make_task
from mass_tools.export import ExportError, main

transformers = pytest.importorskip(
    "transformers", reason="transformers is an optional extra: pip install -e '.[hf]'")
from mass_tools.hf.directory import chosen_direction  # noqa: E402
from mass_tools.hf.generation import (  # noqa: E402
    fairseq_processors,
    generation_config,
    max_new_tokens,
)
from mass_tools.hf.model import to_bart  # noqa: E402

DATA = REPO / "examples" / "data"
# both sides stop after this many tokens (and </s>): it bounds the time, and the
# 4-update model reaches it, where only fairseq's last-step rule gives its tokens
MAX_LEN_B = 14

# ------------------------------------------------------------- fast: tiny models


def tiny(mono_data, **overrides):
    """A tiny transformer_mass model (eval mode), and its configuration as a
    checkpoint saves it: the options it was built with, as a dict."""
    args = Namespace(**{"arch": "transformer_mass_tiny", "max_source_positions": 64,
                        "max_target_positions": 64, **overrides})
    ARCH_CONFIG_REGISTRY[args.arch](args)
    torch.manual_seed(0)
    model = make_task(mono_data[0]).build_model(args)
    return model.eval(), vars(args)


REFUSED = [
    (dict(embedding_style="fairseq"), "--embedding-style fairseq"),
    (dict(activation_fn="gelu_accurate"), "--activation-fn gelu_accurate"),
    (dict(share_all_embeddings=False), "--share-all-embeddings"),
    (dict(encoder_normalize_before=True), "--encoder-normalize-before"),
    (dict(decoder_normalize_before=True), "--decoder-normalize-before"),
    (dict(encoder_learned_pos=False), "--encoder-learned-pos"),
    (dict(no_token_positional_embeddings=True), "--no-token-positional-embeddings"),
    (dict(max_target_positions=32), "--max-target-positions"),
]


@pytest.mark.parametrize("overrides, flag", REFUSED, ids=[f for _, f in REFUSED])
def test_configurations_bart_computes_differently_are_refused_naming_the_option(
        mono_data, overrides, flag):
    model, args = tiny(mono_data, **overrides)
    with pytest.raises(ExportError) as refused:
        to_bart(model, args)
    message = str(refused.value)
    assert flag in message and "\n" not in message, message


def test_the_direction_and_the_length_limit_are_refused_where_bart_cannot_say_them():
    cfg = {"task": {"_name": "translation", "source_lang": "en", "target_lang": "fr"},
           "model": {"language_embeddings": "en,fr"}}
    with pytest.raises(ExportError, match="--direction en-fr"):
        chosen_direction(cfg, None, None)  # language embeddings: folded for one direction
    assert chosen_direction(cfg, "fr", "en") == ("fr", "en")
    cfg["model"]["language_embeddings"] = "none"
    assert chosen_direction(cfg, None, None) == ("en", "fr")
    settings = {"max_len_a": 1.5, "max_len_b": 10, "min_len": 1}
    with pytest.raises(ValueError, match="--max-len-a 1.5"):
        max_new_tokens(settings, 1024)
    assert max_new_tokens(dict(settings, max_len_a=0), 1024) == 11  # ten tokens, then </s>


def test_the_command_refuses_before_reading_the_checkpoint(tmp_path):
    checkpoint, spm = tmp_path / "checkpoint.pt", tmp_path / "spm.model"
    checkpoint.write_bytes(b"not read")
    spm.write_bytes(b"not read")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    for extra, named in [([], "--spm-model"), (["--spm-model", str(spm)], "--force"),
                         (["--spm-model", str(spm), "--force"], "no config.json")]:
        with pytest.raises(SystemExit) as stopped:
            main(["--checkpoint", str(checkpoint), "--transformers", str(mine), *extra])
        assert named in str(stopped.value.code)
    assert (mine / "notes.txt").read_text() == "kept"  # --force replaces exports only


@pytest.mark.parametrize("beam", [1, 5])
def test_the_generation_config_saves_and_loads_for_greedy_and_beam_search(tmp_path, beam):
    settings = {"beam": beam, "lenpen": 1.0, "max_len_a": 0, "max_len_b": 10, "min_len": 1}
    generation_config(settings, Dictionary(), 1024).save_pretrained(tmp_path)  # validated
    loaded = transformers.GenerationConfig.from_pretrained(tmp_path)
    assert loaded.num_beams == beam and loaded.max_length == 12  # start, 10 tokens, </s>
    assert loaded.early_stopping is (True if beam > 1 else None)  # unset for greedy
    assert loaded.forced_eos_token_id is None


def right_padded(lengths, vocab, pad, eos, seed):
    """Random sentences of ``lengths`` (ids 4..vocab-2), each ending with </s>,
    padded on the right: (tokens B x T, True where a token is)."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.full((len(lengths), max(lengths)), pad)
    for row, n in enumerate(lengths):
        tokens[row, :n - 1] = torch.randint(4, vocab - 1, (n - 1,), generator=generator)
        tokens[row, n - 1] = eos
    return tokens, tokens.ne(pad)


VARIANTS = {
    "xlm style": {},
    "language embeddings": dict(language_embeddings="en,fr"),
    "relu, sqrt(dim) scale": dict(activation_fn="relu", no_scale_embedding=False),
}


def assert_same_outputs(fairseq, hf, src, src_mask, tgt, tgt_mask, eos, atol):
    """fairseq's encoder output and logits equal the transformers model's
    where there are tokens (padding positions compute nothing either side
    uses); returns fairseq's logits."""
    # </s> y1 ... yn: fairseq's previous output tokens, valid where tgt_mask is
    prev = torch.cat([torch.full((len(tgt), 1), eos), tgt[:, :-1]], dim=1)
    with torch.no_grad():
        encoded = fairseq.encoder(src, src_lengths=src_mask.sum(1))["encoder_out"][0]
        logits = fairseq(src, src_mask.sum(1), prev)[0]
        out = hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=prev,
                 decoder_attention_mask=tgt_mask)
    # T x B x C -> B x T x C
    assert torch.allclose(encoded.transpose(0, 1)[src_mask],
                          out.encoder_last_hidden_state[src_mask], atol=atol)
    assert torch.allclose(logits[tgt_mask], out.logits[tgt_mask], atol=atol)
    return logits


@pytest.mark.parametrize("overrides", VARIANTS.values(), ids=list(VARIANTS))
def test_bart_computes_what_the_fairseq_model_computes(mono_data, overrides):
    model, args = tiny(mono_data, **overrides)
    if model.encoder.embed_langs is not None:
        model.encoder.embed_langs.default_src, model.encoder.embed_langs.default_tgt = 1, 0
    bart = to_bart(model, args)
    dictionary = model.encoder.dictionary
    vocab, pad, eos = len(dictionary), dictionary.pad(), dictionary.eos()
    src, src_mask = right_padded([9, 4, 7], vocab, pad, eos, seed=1)
    tgt, tgt_mask = right_padded([6, 8, 3], vocab, pad, eos, seed=2)
    logits = assert_same_outputs(model, bart, src, src_mask, tgt, tgt_mask, eos, atol=1e-5)
    assert logits[tgt_mask].std() > 0.1  # the comparison is not between constants


# ------------------------------------------------- slow: the quickstart's model


@pytest.fixture(scope="module")
def exported(quickstart, tmp_path_factory):
    """The quickstart's en->fr model exported with --transformers, and its
    work directory (spm.model, data-bin, checkpoints)."""
    work, _ = quickstart
    out = tmp_path_factory.mktemp("transformers") / "en-fr"
    assert main(["--checkpoint", str(work / "checkpoints/ft-en-fr/checkpoint_best.pt"),
                 "--data-bin", str(work / "data-bin"), "--spm-model", str(work / "spm.model"),
                 "--direction", "en-fr", "--transformers", str(out),
                 "--beam", "5", "--max-len-b", str(MAX_LEN_B)]) == 0
    return work, out


@pytest.fixture(scope="module")
def hf(exported):
    """(model, tokenizer) as transformers loads them, from local files only."""
    _, out = exported
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(out, local_files_only=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def fairseq_model(exported):
    """The fine-tuned checkpoint as fairseq-generate loads it: (model, task)."""
    work, _ = exported
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(work / "checkpoints/ft-en-fr/checkpoint_best.pt")],
        arg_overrides={"data": str(work / "data-bin")})
    return models[0].eval(), task


def binarized(work, dictionary, lang):
    """The binarized en-fr test set's ``lang`` side, one id list per line."""
    dataset = data_utils.load_indexed_dataset(str(work / f"data-bin/test.en-fr.{lang}"),
                                              dictionary)
    return [dataset[i].tolist() for i in range(len(dataset))]


def padded(rows, pad):
    """Id lists padded on the right: (B x T, True where a token is)."""
    tokens = torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows],
                                             batch_first=True, padding_value=pad)
    return tokens, tokens.ne(pad)


@pytest.mark.slow
def test_the_directory_loads_offline_and_says_what_it_is(exported, hf):
    work, out = exported
    model, tokenizer = hf
    assert isinstance(model, transformers.BartForConditionalGeneration)
    checkpoint = torch.load(work / "checkpoints/ft-en-fr/checkpoint_best.pt",
                            weights_only=False)
    assert model.get_input_embeddings().weight.shape == \
        checkpoint["model"]["encoder.embed_tokens.weight"].shape
    assert len(tokenizer) == model.config.vocab_size
    generation = model.generation_config  # the export's --beam 5 --max-len-b
    assert generation.num_beams == 5 and generation.max_length == MAX_LEN_B + 2
    assert generation.forced_eos_token_id is None
    card = (out / "README.md").read_text()
    updates = checkpoint["optimizer_history"][-1]["num_updates"]
    assert f"{updates} updates" in card and "en -> fr" in card
    assert f"--max-len-b {MAX_LEN_B}" in card  # the command that made it


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_tokenizer_gives_the_binarized_ids(exported, hf, fairseq_model, lang):
    work, _ = exported
    _, tokenizer = hf
    lines = (DATA / f"test.{lang}").read_text(encoding="utf-8").splitlines()
    expected = binarized(work, fairseq_model[1].source_dictionary, lang)
    assert len(lines) == len(expected) == 300
    assert tokenizer(lines)["input_ids"] == expected


@pytest.mark.slow
def test_encoder_and_decoder_outputs_agree_within_1e4(exported, hf, fairseq_model):
    work, _ = exported
    model, (fairseq, task) = hf[0], fairseq_model
    dictionary = task.source_dictionary
    pad, eos = dictionary.pad(), dictionary.eos()
    src, src_mask = padded(binarized(work, dictionary, "en")[:64], pad)
    tgt, tgt_mask = padded(binarized(work, dictionary, "fr")[:64], pad)
    assert_same_outputs(fairseq, model, src, src_mask, tgt, tgt_mask, eos, atol=1e-4)


def generation_args(work, *flags):
    """fairseq-generate's configuration for the en-fr test set with ``flags``."""
    parser = options.get_generation_parser()
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, [
        str(work / "data-bin"), "--path", str(work / "checkpoints/ft-en-fr/checkpoint_best.pt"),
        "--user-dir", str(PLUGIN_DIR), "--task", "translation", "-s", "en", "-t", "fr",
        "--gen-subset", "test", "--required-batch-size-multiple", "1", "--cpu", *flags]))


def fairseq_hypotheses(work, dictionary, *flags):
    """fairseq-generate, in this process: {id: (token ids with </s>, score in bits)}."""
    log = io.StringIO()
    fairseq_generate._main(generation_args(work, *flags), log)
    found = re.findall(r"^H-(\d+)\t(\S+)\t(.*)$", log.getvalue(), flags=re.M)
    return {int(i): ([dictionary.index(p) for p in pieces.split()] + [dictionary.eos()],
                     float(score)) for i, score, pieces in found}


def hf_hypotheses(model, rows, pad, **generate):
    """model.generate over ``rows`` (source ids) in batches of 64, with the
    export's config and fairseq's end at the limit: {id: (ids, score in bits)}."""
    eos, found = model.config.eos_token_id, {}
    for start in range(0, len(rows), 64):
        src, mask = padded(rows[start:start + 64], pad)
        with torch.no_grad():
            out = model.generate(input_ids=src, attention_mask=mask,
                                 logits_processor=fairseq_processors(model),
                                 return_dict_in_generate=True, output_scores=True, **generate)
        scores = out.get("sequences_scores")  # beam search only: natural log
        for row, sequence in enumerate(out.sequences.tolist()):
            tokens = sequence[1:]  # after the decoder's start token, up to </s>
            tokens = tokens[:tokens.index(eos) + 1] if eos in tokens else tokens
            score = None if scores is None else scores[row].item() / math.log(2)
            found[start + row] = (tokens, score)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("beam", [1, 5])
def test_generate_gives_fairseq_generates_hypotheses(exported, hf, fairseq_model, beam):
    work, _ = exported
    model, dictionary = hf[0], fairseq_model[1].target_dictionary
    expected = fairseq_hypotheses(work, dictionary, "--beam", str(beam), "--batch-size", "64",
                                  "--max-len-a", "0", "--max-len-b", str(MAX_LEN_B))
    at_limit = sum(len(tokens) == MAX_LEN_B + 1 for tokens, _ in expected.values())
    assert at_limit, "some hypotheses should reach the limit, where fairseq's end differs"
    got = hf_hypotheses(model, binarized(work, dictionary, "en"), dictionary.pad(),
                        num_beams=beam)
    assert sorted(got) == sorted(expected) == list(range(300))
    differ = [i for i in expected if got[i][0] != expected[i][0]]
    assert not differ, (f"{len(differ)} of 300 differ, e.g. {differ[0]}: fairseq "
                        f"{expected[differ[0]][0]}, transformers {got[differ[0]][0]}")
    if beam > 1:  # the same scores: sum of log-probabilities / length, </s> included
        for i in expected:
            assert got[i][1] == pytest.approx(expected[i][1], abs=1e-4), i


def generate_sh_defaults():
    """examples/generate.sh's defaults, which the quickstart decoded with."""
    script = (REPO / "examples" / "generate.sh").read_text()
    return {name: float(re.search(rf"^{name}=\$\{{{name}:-([\d.]+)\}}", script, re.M)[1])
            for name in ("BEAM", "MAX_LEN_A", "MAX_LEN_B", "BATCH_SIZE")}


def fairseq_batches(work, batch_size):
    """The ids of the batches fairseq-generate makes of the test set, shortest first."""
    cfg = generation_args(work, "--batch-size", str(batch_size))
    task = tasks.setup_task(cfg.task)
    task.load_dataset("test")
    batches = task.get_batch_iterator(task.dataset("test"), max_sentences=batch_size,
                                      max_positions=task.max_positions(),
                                      required_batch_size_multiple=1)
    return [batch["id"].tolist() for batch in batches.next_epoch_itr(shuffle=False)]


@pytest.mark.slow
def test_raw_text_in_raw_text_out_is_generate_sh_output(exported, hf):
    work, _ = exported
    model, tokenizer = hf
    settings = generate_sh_defaults()
    source = (DATA / "test.en").read_text(encoding="utf-8").split("\n")
    decoded = (work / "checkpoints/ft-en-fr/checkpoint_best.test.en-fr.txt").read_text(
        encoding="utf-8").split("\n")
    # fairseq's two batches of shortest sentences (to save time; each batch has its limit)
    for ids in fairseq_batches(work, int(settings["BATCH_SIZE"]))[:2]:
        batch = tokenizer([source[i] for i in ids], return_tensors="pt", padding=True)
        # --max-len-a: at most int(a * longest source (with </s>) + b) tokens, then </s>;
        # fairseq sizes it per batch, so is it sized here, after the decoder's start token
        limit = int(settings["MAX_LEN_A"] * batch["input_ids"].size(1) + settings["MAX_LEN_B"])
        with torch.no_grad():
            out = model.generate(**batch, num_beams=int(settings["BEAM"]), max_length=limit + 2,
                                 logits_processor=fairseq_processors(model, limit + 2))
        assert tokenizer.batch_decode(out, skip_special_tokens=True) == [decoded[i] for i in ids]
