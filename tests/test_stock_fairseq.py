"""Importing the plugin (conftest does) leaves stock fairseq working: its
TorchScript export with n-gram blocking, and its checkpoint round trip."""

import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.ngram_repeat_block import NGramRepeatBlock
from fairseq.sequence_generator import SequenceGenerator
from omegaconf import OmegaConf

from mass_plugin import ngram_blocking


def stock_translation_model(data_dir, seed=0):
    """fairseq's own translation task and a tiny stock ``transformer``, as
    fairseq's TorchScript test builds one (2 encoder layers, 1 decoder layer)."""
    for lang in ("src", "tgt"):
        (data_dir / f"dict.{lang}.txt").write_text("".join(f"t{i} 1000\n" for i in range(20)))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_dir), "--task", "translation", "-s", "src", "-t", "tgt",
        "--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "1",
        "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
    ])
    task = tasks.setup_task(args)
    torch.manual_seed(seed)
    return args, task, task.build_model(args).eval()


def source_batch(dictionary, seed=0, bsz=3, length=8):
    tokens = torch.randint(dictionary.nspecial, len(dictionary), (bsz, length),
                           generator=torch.Generator().manual_seed(seed))
    tokens[:, -1] = dictionary.eos()
    return {"net_input": {"src_tokens": tokens, "src_lengths": torch.full((bsz,), length)}}


def repeated_bigrams(tokens):
    bigrams = list(zip(tokens, tokens[1:]))
    return len(bigrams) - len(set(bigrams))


def test_a_scripted_generator_blocks_ngrams_as_the_eager_one(tmp_path):
    _, task, model = stock_translation_model(tmp_path)
    tgt_dict = task.target_dictionary
    sample = source_batch(tgt_dict)

    def generator(no_repeat_ngram_size):
        return SequenceGenerator([model], tgt_dict, beam_size=2, max_len_b=12,
                                 no_repeat_ngram_size=no_repeat_ngram_size)

    free = [beams[0]["tokens"].tolist() for beams in generator(0)(sample)]
    # the untrained model repeats itself: blocking has something to do
    assert sum(map(repeated_bigrams, free)) > 0

    eager = generator(2)
    scripted = torch.jit.script(eager)  # raised with the closure-based patch
    with torch.no_grad():
        expected, got = eager(sample), scripted(sample)
    assert len(got) == len(expected) == 3
    for eager_beams, scripted_beams in zip(expected, got):
        assert len(scripted_beams) == len(eager_beams) == 2
        for hypo, scripted_hypo in zip(eager_beams, scripted_beams):
            assert torch.equal(scripted_hypo["tokens"], hypo["tokens"])
            torch.testing.assert_close(scripted_hypo["positional_scores"],
                                       hypo["positional_scores"])
            assert repeated_bigrams(hypo["tokens"].tolist()) == 0


def test_the_scripted_blocker_looks_at_the_tokens_so_far():
    """The plugin's CPU fix also holds in TorchScript: at step 3 the rows are
    ``bos a b a`` and ``bos b a b``, then padding (fairseq alone matches the
    padding and blocks nothing), so ``b`` and ``a`` are blocked."""
    bos, a, b, pad = 2, 5, 6, 1
    tokens = torch.tensor([[bos, a, b, a, pad, pad, pad], [bos, b, a, b, pad, pad, pad]])
    blocker = NGramRepeatBlock(2, use_extension=False)
    scripted = torch.jit.script(blocker)
    expected = torch.zeros(2, 8)
    expected[0, b] = expected[1, a] = -float("inf")
    assert torch.equal(blocker(tokens, torch.zeros(2, 8), 1, 2, 3), expected)
    assert torch.equal(scripted(tokens, torch.zeros(2, 8), 1, 2, 3), expected)

    # patched once per process: installing again neither wraps the patch in
    # itself nor loses fairseq's method
    ngram_blocking.install()
    assert NGramRepeatBlock._no_repeat_ngram is ngram_blocking._no_repeat_ngram
    kept = getattr(NGramRepeatBlock, ngram_blocking.FAIRSEQ_METHOD)
    assert kept.__code__.co_filename.endswith("fairseq/ngram_repeat_block.py")
    assert torch.equal(blocker(tokens, torch.zeros(2, 8), 1, 2, 3), expected)


def test_a_stock_checkpoint_round_trip_loads_through_the_plugin(tmp_path):
    """A trainer-style checkpoint of a stock model (its cfg.model is an
    argparse.Namespace) saved and loaded by fairseq's own functions."""
    assert getattr(checkpoint_utils.load_checkpoint_to_cpu, "mass_plugin_safe", False)
    args, _, model = stock_translation_model(tmp_path)
    cfg = OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True,
                                 enum_to_str=True)
    state = {
        "args": None, "cfg": cfg, "model": model.state_dict(), "criterion": None,
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion",
                               "optimizer_name": "FairseqAdam",
                               "lr_scheduler_state": {"best": 2.5}, "num_updates": 7}],
        "task_state": {},
        "extra_state": {"epoch": 2, "ema": {k: v + 1 for k, v in model.state_dict().items()}},
    }
    path = str(tmp_path / "checkpoint_last.pt")
    checkpoint_utils.torch_persistent_save(state, path)

    loaded = checkpoint_utils.load_checkpoint_to_cpu(path)
    assert loaded["cfg"].model.arch == "transformer"
    assert loaded["optimizer_history"][-1]["num_updates"] == 7
    models, loaded_cfg, task = checkpoint_utils.load_model_ensemble_and_task([path])
    assert loaded_cfg.task._name == "translation" and len(task.target_dictionary) == 24
    reloaded = models[0].state_dict()
    assert reloaded.keys() == model.state_dict().keys()
    for name, weight in model.state_dict().items():
        assert torch.equal(reloaded[name], weight), name
    ema = checkpoint_utils.load_ema_from_checkpoint(path)["model"]
    for name, weight in model.state_dict().items():
        assert torch.equal(ema[name], weight + 1), name
