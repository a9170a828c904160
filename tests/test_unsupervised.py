"""Cross-lingual MASS and the ``unsupervised_translation`` task: language
embeddings, online back-translation batches, two gloo ranks, exact resume,
BLEU validation and decoding in a chosen direction."""

import re
import subprocess

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.sequence_generator import SequenceGenerator

from conftest import (
    ALL_RANKS,
    REPO,
    assert_every_rank_ends_with,
    assert_same_weights,
    cli_env,
    cross_lingual_mass_checkpoint,
    kill_after_first_save,
    largest_weight_change,
    run_cli,
    run_torchrun,
    unsup_data,
)
from mass_plugin.tasks.unsupervised_translation import (
    UnsupervisedTranslationConfig,
    UnsupervisedTranslationTask,
)

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return unsup_data(tmp_path_factory.mktemp("unsup"))


def train_command(data, save_dir, *extra):
    # no dropout: runs that split the work differently must draw nothing at random
    return ["fairseq-train", data / "bin", "--user-dir", "mass_plugin",
            "--task", "unsupervised_translation", "--langs", "en,fr",
            "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss", "--cpu",
            "--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0",
            "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "300",
            "--max-update", "20", "--seed", "3", "--num-workers", "0",
            "--lambda-bt", "0:0,4:0,8:1", "--save-dir", save_dir,
            "--log-format", "simple", "--log-interval", "1", *extra]


def load_task(data, **overrides):
    cfg = UnsupervisedTranslationConfig(data=str(data / "bin"), langs="en,fr", seed=1,
                                        train_subset="train", dataset_impl=None, **overrides)
    return UnsupervisedTranslationTask.setup_task(cfg)


def tiny_model(task, language_spread=3.0, embedding_style=None):
    from argparse import Namespace

    from mass_plugin.models.transformer_mass import TransformerMassModel, transformer_mass_tiny
    args = Namespace(arch="transformer_mass_tiny", dropout=0.0, attention_dropout=0.0,
                     activation_dropout=0.0, max_source_positions=256,
                     max_target_positions=256, embedding_style=embedding_style)
    transformer_mass_tiny(args)
    torch.manual_seed(0)
    model = TransformerMassModel.build_model(args, task)
    if language_spread:
        with torch.no_grad():  # make the two languages very different
            model.encoder.embed_langs.weight.normal_(0, language_spread)
    return model.eval()


def greedy(model, src_tokens, src_lang, tgt_lang, steps):
    """Greedy decoding by re-running the full decoder: no incremental state,
    no beam bookkeeping, nothing reordered."""
    eos = model.decoder.dictionary.eos()
    out = torch.full((src_tokens.size(0), 1), eos)
    scores = []
    for _ in range(steps):
        logits, _ = model(src_tokens, None, out, src_lang_id=src_lang, tgt_lang_id=tgt_lang)
        lprobs = torch.log_softmax(logits[:, -1].float(), dim=-1)
        lprobs[:, model.decoder.dictionary.pad()] = -float("inf")
        lprobs[:, eos] = -float("inf")  # as min_len does
        best = lprobs.argmax(-1, keepdim=True)
        scores.append(lprobs.gather(1, best))
        out = torch.cat([out, best], dim=1)
    return out[:, 1:], torch.cat(scores, dim=1)


def test_language_embeddings_reach_encoder_and_decoder_including_beam_search(data):
    task = load_task(data)
    model = tiny_model(task)
    assert model.encoder.embed_langs is model.decoder.embed_langs
    d = task.dictionary
    src = torch.stack([d.encode_line("e1 e10 e33 e6", add_if_not_exist=False)] * 2).long()
    lang = torch.tensor([0, 0])
    out_en = model.encoder(src, src_lang_id=lang)["encoder_out"][0]
    out_fr = model.encoder(src, src_lang_id=1 - lang)["encoder_out"][0]
    assert not torch.allclose(out_en, out_fr)
    # per sentence target languages: row 0 -> fr, row 1 -> en
    tgt_lang = torch.tensor([1, 0])
    expected, scores = greedy(model, src, lang, tgt_lang, steps=5)
    # the same source, two target languages: other scores
    assert not torch.allclose(scores[0], scores[1])
    generator = SequenceGenerator([model], d, beam_size=1, max_len_a=0, max_len_b=6,
                                  min_len=6)
    hypos = generator.generate([model], {"net_input": {
        "src_tokens": src, "src_lengths": torch.tensor([5, 5]),
        "src_lang_id": lang, "tgt_lang_id": tgt_lang}})
    for row, hypo in enumerate(hypos):
        assert hypo[0]["tokens"][:5].tolist() == expected[row].tolist()
        assert torch.allclose(hypo[0]["positional_scores"][:5], scores[row], atol=1e-4)


def test_a_language_weighs_like_a_token_and_older_checkpoints_keep_their_function(data):
    task = load_task(data)
    for style in ("xlm", "fairseq"):  # tokens at scale 1, then sqrt(embed_dim)
        model = tiny_model(task, language_spread=None, embedding_style=style)
        scale = model.encoder.embed_scale
        assert (scale > 1) == (style == "fairseq")
        # the language vector added to the input is as large as a scaled token embedding
        language = model.encoder.embed_langs(torch.tensor([0, 1])).norm(dim=-1).mean()
        token = (scale * model.encoder.embed_tokens.weight[task.dictionary.nspecial:]).norm(
            dim=-1).mean()
        assert 0.5 < float(language / token) < 2, style
    # a checkpoint from before the scaling: no version key, vectors added unscaled
    d = task.dictionary
    src = torch.stack([d.encode_line("e1 e10 e33 e6", add_if_not_exist=False)] * 2).long()
    prev = torch.stack([d.encode_line("f2 f7 f9", add_if_not_exist=False)] * 2).long()
    langs = dict(src_lang_id=torch.tensor([0, 1]), tgt_lang_id=torch.tensor([1, 0]))
    expected, _ = model(src, None, prev, **langs)
    old = {k: v.clone() for k, v in model.state_dict().items()
           if not k.endswith("embed_langs.version")}
    for side in ("encoder", "decoder"):
        old[f"{side}.embed_langs.weight"] = scale * old[f"{side}.embed_langs.weight"]
    torch.manual_seed(1)
    loaded = tiny_model(task, embedding_style="fairseq")  # the style of those checkpoints
    loaded.load_state_dict(old)
    assert torch.allclose(loaded(src, None, prev, **langs)[0], expected, atol=1e-5)
    assert "encoder.embed_langs.version" in loaded.state_dict()


def test_embedding_lang_pair_for_tasks_whose_suffixes_are_not_languages(data):
    """Summarization reads .document/.summary files: --embedding-lang-pair
    says which language embeddings the encoder and the decoder get."""
    from argparse import Namespace
    from types import SimpleNamespace

    from mass_plugin.models.transformer_mass import TransformerMassModel, transformer_mass_tiny
    d = load_task(data).dictionary
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d,
                           cfg=SimpleNamespace(source_lang="document", target_lang="summary"))

    def build(**extra):
        args = Namespace(arch="transformer_mass_tiny", language_embeddings="en,fr", **extra)
        transformer_mass_tiny(args)
        return TransformerMassModel.build_model(args, task)

    with pytest.raises(ValueError, match="--embedding-lang-pair en-en"):
        build()
    model = build(embedding_lang_pair="fr-en")
    assert (model.encoder.embed_langs.default_src, model.encoder.embed_langs.default_tgt) == (1, 0)
    with pytest.raises(ValueError, match="--embedding-lang-pair de-en"):
        build(embedding_lang_pair="de-en")


def test_backtranslation_batch_translates_into_the_other_language(data):
    task = load_task(data)
    model = tiny_model(task)
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in (0, 1, 400, 401)])  # 2 en, 2 fr
    assert sample["net_input"]["src_lang_id"].tolist() == [0, 0, 1, 1]
    model.train()
    bt = task.backtranslation_sample(model, sample)
    assert model.training  # put back in training mode
    raw = sample["raw"]
    assert bt["net_input"]["src_lang_id"].tolist() == [1, 1, 0, 0]
    assert bt["net_input"]["tgt_lang_id"].tolist() == [0, 0, 1, 1]
    pad = task.dictionary.pad()
    for i in range(4):
        original = raw["src_tokens"][i][: raw["src_lengths"][i]]
        assert bt["target"][i][bt["target"][i].ne(pad)].tolist() == original.tolist()
        # the source is the model's own (greedy) translation into the other language
        model.eval()
        hypo = task._generator(model, 1).generate([model], {"net_input": {
            "src_tokens": original[None], "src_lengths": raw["src_lengths"][i:i + 1],
            "src_lang_id": raw["lang_id"][i:i + 1],
            "tgt_lang_id": 1 - raw["lang_id"][i:i + 1]}})[0][0]["tokens"]
        source = bt["net_input"]["src_tokens"][i]
        source = source[source.ne(pad)].tolist()
        # the same greedy path; in the batch the length limit follows the
        # longest source, so the path may go on where this one was cut
        assert source[-1] == task.dictionary.eos()
        assert source[: len(hypo) - 1] == hypo[:-1].tolist()


def test_sampled_backtranslation_draws_from_the_torch_seed(data):
    task = load_task(data, bt_sampling_topk=-1)
    model = tiny_model(task)
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in (0, 1, 400, 401)])  # 2 en, 2 fr

    def back_translations(seed, which=task):
        torch.manual_seed(seed)
        bt = which.backtranslation_sample(model, sample)
        assert bt["net_input"]["src_lang_id"].tolist() == [1, 1, 0, 0]
        assert torch.equal(bt["target"], which.backtranslation_sample(model, sample)["target"])
        return bt["net_input"]["src_tokens"]

    first = back_translations(1)
    assert torch.equal(first, back_translations(1))
    assert not torch.equal(first, back_translations(2))
    assert not torch.equal(first, back_translations(1, load_task(data)))  # greedy
    with pytest.raises(ValueError, match="--bt-sampling-topk: .* needs --bt-beam 1"):
        load_task(data, bt_sampling_topk=5, bt_beam=2)
    with pytest.raises(ValueError, match="--bt-sampling-topk"):
        load_task(data, bt_sampling_topk=-2)


def test_denoising_batch_restores_each_sentence_from_noise_in_its_own_language(data):
    task = load_task(data, dae_word_shuffle=3.0, dae_word_dropout=0.2, dae_word_blank=0.2,
                     dae_words="tokens")
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in (0, 1, 400, 401)])  # 2 en, 2 fr
    dae = task.denoising_sample(sample, update_num=5)
    assert dae["net_input"]["src_lang_id"].tolist() == [0, 0, 1, 1]
    assert dae["net_input"]["tgt_lang_id"].tolist() == [0, 0, 1, 1]
    raw, pad, eos = sample["raw"], task.dictionary.pad(), task.dictionary.eos()
    sources = [row[row.ne(pad)].tolist() for row in dae["net_input"]["src_tokens"]]
    for i, source in enumerate(sources):
        original = raw["src_tokens"][i][: raw["src_lengths"][i]].tolist()
        assert dae["target"][i][dae["target"][i].ne(pad)].tolist() == original
        assert source[-1] == eos and len(source) == dae["net_input"]["src_lengths"][i]
        # what is left of the original, plus blanks
        kept = [t for t in source if t != task.mask_idx]
        assert set(kept) <= set(original)
    assert any(s != raw["src_tokens"][i][: raw["src_lengths"][i]].tolist()
               for i, s in enumerate(sources))
    again = task.denoising_sample(sample, update_num=5)
    assert torch.equal(again["net_input"]["src_tokens"], dae["net_input"]["src_tokens"])
    with pytest.raises(ValueError, match="--dae-\\*: word dropout probability 1.5"):
        load_task(data, dae_word_dropout=1.5)


def test_two_torchrun_ranks_match_one_rank_with_update_freq_2(data, tmp_path):
    """Every rank runs MASS and back-translation each update, with one
    backward, so no rank waits for gradients another did not produce: with
    fairseq's default DDP backend (torch's DistributedDataParallel, which
    stops on a parameter without a gradient), under torchrun. Each rank ends
    with the weights of the one rank (ALL_RANKS writes them)."""
    run_cli(train_command(data, tmp_path / "one", "--disable-validation", "--max-update",
                          "12", "--update-freq", "2"), cwd=REPO)
    # ALL_RANKS in place of the fairseq-train console script (an absolute
    # path: run_torchrun runs it as it is)
    command = train_command(data, tmp_path / "two", "--disable-validation", "--max-update", "12")
    log = run_torchrun([ALL_RANKS, *command[1:]])
    assert "bt_loss" in log  # back-translation ran (from update 5 on)
    one = torch.load(tmp_path / "one/checkpoint_last.pt")
    two = torch.load(tmp_path / "two/checkpoint_last.pt")
    assert two["optimizer_history"][-1]["num_updates"] == 12
    assert_every_rank_ends_with(one["model"], tmp_path / "two", atol=1e-4, rtol=1e-4)
    start = torch.load(tmp_path / "two/rank0.start.pt")
    assert any(not torch.equal(start[k], one["model"][k]) for k in start)  # it trained


def test_killed_and_restarted_run_equals_an_uninterrupted_one(data, tmp_path):
    """With denoising and sampled back-translation on too: both draw from the
    seed and the update."""
    extra = ["--disable-validation", "--save-interval-updates", "10", "--lambda-dae", "1",
             "--bt-sampling-topk", "5"]
    run_cli(train_command(data, tmp_path / "straight", *extra), cwd=REPO)
    kill_after_first_save(train_command(data, tmp_path / "resumed", *extra))
    killed_at = torch.load(tmp_path / "resumed/checkpoint_last.pt")
    assert killed_at["optimizer_history"][-1]["num_updates"] == 10
    out = run_cli(train_command(data, tmp_path / "resumed", *extra), cwd=REPO)
    assert "@ 10 updates)" in out.stdout + out.stderr
    straight = torch.load(tmp_path / "straight/checkpoint_last.pt")
    resumed = torch.load(tmp_path / "resumed/checkpoint_last.pt")
    assert_same_weights(straight, resumed, atol=1e-6, rtol=0)
    assert largest_weight_change(killed_at, straight) > 1e-3


def test_bleu_validation_then_decoding_and_fine_tuning_in_a_chosen_direction(data, tmp_path):
    out = run_cli(train_command(
        data, tmp_path / "ckpt", "--eval-bleu", "--validate-interval-updates", "10",
        "--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"), cwd=REPO)
    log = out.stdout + out.stderr
    valid = re.findall(r"valid on 'valid' subset .*", log)
    assert len(valid) >= 2
    for field in ("bleu_en_fr", "bleu_fr_en", "bleu", "span_acc"):
        assert f"| {field} " in valid[-1], valid[-1]
    assert re.search(r"bt_loss=[\d.]+", log) and re.search(r"mass_loss=[\d.]+", log)
    ckpt = tmp_path / "ckpt/checkpoint_best.pt"
    state = checkpoint_utils.load_checkpoint_to_cpu(str(ckpt))
    assert state["cfg"]["model"].language_embeddings == "en,fr"

    common = ["--user-dir", "mass_plugin", "--task", "unsupervised_translation",
              "--langs", "en,fr", "--path", ckpt, "--cpu", "--beam", "2"]
    outputs = {}
    gen = run_cli(["fairseq-generate", data / "bin", "-s", "fr", "-t", "en", *common],
                  cwd=REPO)
    assert "BLEU4" in gen.stdout + gen.stderr
    for src, tgt in (("en", "fr"), ("fr", "en")):
        inter = run_cli(["fairseq-interactive", data / "bin", "-s", src, "-t", tgt,
                         *common], cwd=REPO, stdin="e1 e10 e33 e6\n")
        outputs[tgt] = [line for line in inter.stdout.splitlines() if line.startswith("H-")]
        assert len(outputs[tgt]) == 1
    # the same source, two target language embeddings, two outputs
    assert outputs["fr"] != outputs["en"]

    # the checkpoint fine-tunes with fairseq's translation task: the language
    # embeddings come from the checkpoint, -s/-t choose them
    def finetune(save_dir, *extra, check=True):
        return run_cli(["fairseq-train", data / "bin", "--user-dir", "mass_plugin",
                        "--task", "translation", "-s", "en", "-t", "fr",
                        "--arch", "transformer_mass_tiny", "--finetune-from-model", ckpt,
                        "--criterion", "cross_entropy", "--cpu", "--optimizer", "adam",
                        "--lr", "0.003", "--max-tokens", "300", "--max-update", "2",
                        "--save-dir", save_dir, "--log-format", "simple", *extra],
                       cwd=REPO, check=check)

    ft = finetune(tmp_path / "ft")
    assert "loaded checkpoint" in (ft.stdout + ft.stderr).lower()
    tuned = torch.load(tmp_path / "ft/checkpoint_last.pt")
    assert tuned["cfg"]["model"].language_embeddings == "en,fr"
    assert tuned["model"]["encoder.embed_langs.weight"].shape[0] == 2
    # asking for a model without them cannot load the checkpoint's weights
    missing = finetune(tmp_path / "ft2", "--language-embeddings", "none", check=False)
    assert missing.returncode != 0
    assert "the checkpoint has language embeddings and this model does not" in missing.stderr


def test_online_recipe_trains_from_a_mass_checkpoint_scores_both_ways_and_resumes(data, tmp_path):
    """projects/unsupervised/online_bt.sh, shrunken: a 2-update cross-lingual MASS
    checkpoint, 4 updates of MASS + online back-translation, both directions
    of the test set scored; a second run keeps everything."""
    cross_lingual_mass_checkpoint(data, tmp_path / "mass", updates=2)
    env = cli_env()
    env.update(DATA_BIN=str(data / "bin"), REFERENCE_PREFIX=str(data / "test"),
               PRETRAINED=str(tmp_path / "mass/checkpoint_last.pt"),
               WORK_DIR=str(tmp_path / "online"), ARCH="transformer_mass_tiny",
               MAX_UPDATE="4", VALIDATE_EVERY="2", MAX_TOKENS="300", WARMUP="2",
               LAMBDA_BT="0:0,2:1", LAMBDA_DAE="1", BT_SAMPLING_TOPK="5", BEAM="2",
               LOG_INTERVAL="1",
               POST_PROCESS="none", NUM_GPUS="0")

    def recipe():
        out = subprocess.run(["bash", "projects/unsupervised/online_bt.sh"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
        return out.stdout + out.stderr

    log = recipe()
    assert "loading pretrained model from" in log and "mass/checkpoint_last.pt" in log
    assert re.search(r"bt_loss=[\d.]+", log) and re.search(r"dae_loss=[\d.]+", log)
    assert "'bt_sampling_topk': 5" in log
    assert re.search(r"valid on 'valid' subset .*\| bleu_en_fr [\d.]+ \| bleu_fr_en", log)
    rows = [r.split("\t") for r in (tmp_path / "online/results.tsv").read_text().splitlines()]
    assert rows[0] == ["direction", "BLEU", "chrF"]
    assert [r[0] for r in rows[1:]] == ["en-fr", "fr-en"]
    assert all(re.fullmatch(r"[\d.]+", value) for r in rows[1:] for value in r[1:])
    references = (data / "test.fr").read_text().splitlines()
    hypotheses = (tmp_path / "online/test.en-fr.txt").read_text().splitlines()
    assert len(hypotheses) == len(references)
    again = recipe()
    assert again.count("scored already, skipping") == 2
    assert "== training" not in again and "Translated" not in again
