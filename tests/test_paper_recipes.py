"""The paper's recipes (examples/paper/): --help, clear errors for missing
inputs and for files binarized with another dictionary, SCALE=paper resolved
to the paper's settings (DRY_RUN=1 prints the commands, with or without the
data), and every recipe end to end at SCALE=tiny on CPUs, on synthetic text
binarized with mass-binarize: pre-training (one process, two torchrun ranks,
two SLURM "nodes"), one round of offline back-translation, online
back-translation, low-resource fine-tuning against its baseline without
pre-training, and summarization, each down to its BLEU or ROUGE table; a
finished run is skipped with its own settings and refused with others."""

import os
import re
import shutil
import subprocess

import pytest
from fairseq import checkpoint_utils

from conftest import REPO, cli_env, free_port, synthetic_sentences, to_french, write
from mass_tools import binarize

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

PAPER = REPO / "examples" / "paper"
RECIPES = ["pretrain.sh", "unsup_online_bt.sh", "unsup_offline_bt.sh", "low_resource.sh",
           "summarization.sh", "unsupervised.sh", "slurm_pretrain.sh"]
NUMBER = r"\d+(\.\d+)?"


def run(name, check=True, **variables):
    """examples/paper/NAME run from the repository root under these variables
    (no GPU): its exit status and its stdout and stderr together."""
    env = cli_env()
    env.update(NUM_GPUS="0")
    env.update({k: str(v) for k, v in variables.items()})
    proc = subprocess.run(["bash", str(PAPER / name)], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if check:
        assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-5000:]}"
    return proc.returncode, proc.stdout


def rows(path):
    return [line.split("\t") for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Non-parallel en and fr text (mono), a few pairs (train, valid, test) and
    article/summary pairs, binarized with mass-binarize in one dictionary;
    the raw test text beside them."""
    root = tmp_path_factory.mktemp("paper")
    # two English sentences longer than the tiny scale's 256 tokens a batch,
    # in training and in validation
    long = synthetic_sentences(7, 2, prefix="e", min_len=300, max_len=320)
    write(root / "mono.en", synthetic_sentences(1, 300, prefix="e") + long)
    write(root / "mono.fr", [to_french(s) for s in synthetic_sentences(2, 300, prefix="e")])
    write(root / "mono.valid.en", synthetic_sentences(3, 20, prefix="e") + long[:1])
    write(root / "mono.valid.fr", [to_french(s) for s in synthetic_sentences(4, 20, prefix="e")])
    pairs = synthetic_sentences(5, 100, prefix="e")
    for split, lines in (("train", pairs[:60]), ("valid", pairs[60:80]), ("test", pairs[80:])):
        write(root / f"{split}.en", lines)
        write(root / f"{split}.fr", [to_french(s) for s in lines])
    binarize.main(["--destdir", str(root / "bin"), "--langs", "en,fr",
                   "--mono-train", f"{root}/mono.{{lang}}", "--mono-valid",
                   f"{root}/mono.valid.{{lang}}", "--pair", "en-fr", "--train", str(root / "train"),
                   "--valid", str(root / "valid"), "--test", str(root / "test"), "--workers", "1"])
    articles = synthetic_sentences(6, 80, prefix="e", min_len=8)
    for split, lines in (("train", articles[:50]), ("valid", articles[50:65]),
                         ("test", articles[65:])):
        write(root / f"{split}.document", lines)
        write(root / f"{split}.summary", [" ".join(line.split()[:4]) for line in lines])
    binarize.main(["--destdir", str(root / "sum-bin"), "--dict", str(root / "bin/dict.txt"),
                   "--langs", "document,summary", "--pair", "document-summary",
                   "--train", str(root / "train"), "--valid", str(root / "valid"),
                   "--test", str(root / "test"), "--workers", "1"])
    return root


@pytest.fixture(scope="module")
def pretrained(data):
    """The tiny cross-lingual pre-training: (checkpoint, log)."""
    _, log = run("pretrain.sh", SCALE="tiny", DATA_BIN=data / "bin", SAVE_DIR=data / "pretrain")
    return data / "pretrain" / "checkpoint_best.pt", log


@pytest.mark.parametrize("name", RECIPES)
def test_help_prints_the_header_and_every_variable(name):
    env = cli_env()
    proc = subprocess.run(["bash", str(PAPER / name), "--help"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    header = (PAPER / name).read_text().splitlines()[1].lstrip("# ")
    assert proc.stdout.startswith(header)
    variables = re.findall(r"^([A-Z][A-Z0-9_]*)=\$\{", (PAPER / name).read_text(), re.M)
    assert variables, name
    for variable in variables:
        assert f"\n  {variable}=${{" in proc.stdout, variable


@pytest.mark.parametrize("name,variables,error", [
    ("pretrain.sh", {}, "DATA_BIN: set DATA_BIN to mass-binarize output"),
    ("pretrain.sh", {"DATA_BIN": "/nowhere"},
     "error: DATA_BIN: /nowhere/dict.txt is missing or empty; binarize the text with"),
    ("pretrain.sh", {"DATA_BIN": "{bin}", "LANGS": "en,de"},
     "error: DATA_BIN and LANGS: {bin}/train.de.bin is missing or empty"),
    ("pretrain.sh", {"DATA_BIN": "{bin}", "SCALE": "huge"}, "error: SCALE=huge: choose paper"),
    ("unsup_online_bt.sh", {"DATA_BIN": "{bin}", "REFERENCE_PREFIX": "{root}/test",
                            "PRETRAINED": "/nowhere.pt"},
     "error: PRETRAINED: /nowhere.pt is missing or empty; pre-train with examples/paper/"),
    ("unsup_offline_bt.sh", {"DATA_BIN": "{bin}", "REFERENCE_PREFIX": "{root}/nothing",
                             "PRETRAINED": "{root}/test.en"},
     "error: REFERENCE_PREFIX: {root}/nothing.en is missing or empty"),
    ("low_resource.sh", {"DATA_BIN": "{bin}", "REFERENCE_PREFIX": "{root}/test",
                         "PRETRAINED": "{root}/test.en", "TRAIN_SUBSETS": "train10k"},
     "error: DATA_BIN and TRAIN_SUBSETS: {bin}/train10k.en-fr.en.bin is missing or empty"),
    ("summarization.sh", {"DATA_BIN": "{root}/sum-bin", "REFERENCE": "{root}/test.summary"},
     "PRETRAINED: set PRETRAINED to the checkpoint"),
])
def test_a_missing_input_stops_naming_the_variable_and_what_to_do(data, name, variables, error):
    values = {k: v.replace("{bin}", str(data / "bin")).replace("{root}", str(data))
              for k, v in variables.items()}
    code, out = run(name, False, **{"WORK_DIR": data / "unused", **values})
    error = error.replace("{bin}", str(data / "bin")).replace("{root}", str(data))
    assert code != 0 and error in out, out[-2000:]
    assert not (data / "unused").exists()


def paper_run(data, name, **variables):
    """A dry run at SCALE=paper on 8 GPUs: the commands it prints."""
    values = dict(SCALE="paper", DRY_RUN="1", NUM_GPUS="8", WORK_DIR=data / "dry",
                  DATA_BIN=data / "bin", REFERENCE_PREFIX=data / "test",
                  PRETRAINED=data / "test.en")  # any file: a dry run reads no checkpoint
    _, out = run(name, **{**values, **variables})
    assert not (data / "dry").exists()  # a dry run writes nothing
    return out


PAPER_MODEL = ["--encoder-layers 6", "--decoder-layers 6", "--encoder-embed-dim 1024",
               "--decoder-embed-dim 1024", "--encoder-ffn-embed-dim 4096",
               "--decoder-ffn-embed-dim 4096", "--encoder-attention-heads 8",
               "--decoder-attention-heads 8", "--activation-fn gelu", "--dropout 0.1",
               "--attention-dropout 0.1", "--lr-scheduler inverse_sqrt", "--clip-norm 5",
               "--warmup-init-lr 1e-07"]


def test_scale_paper_pretrains_with_the_papers_settings(data):
    out = paper_run(data, "pretrain.sh", SAVE_DIR=data / "dry")
    train = [line for line in out.splitlines() if line.startswith("+ ")]
    assert len(train) == 1 and "fairseq-train" in train[0]
    for option in PAPER_MODEL + [
            "--task masked_s2s", "--langs en,fr", "--mask-ratio 0.5", "--lr 0.0001",
            "--warmup-updates 4000", "--max-tokens 3000", "--max-update 625000",
            "--fp16 --distributed-world-size 8 --update-freq 1", "--span-start mass"]:
        assert f" {option} " in train[0] + " ", option
    assert "625000 updates of up to 24000 tokens" in out
    # on one process, the same 24,000 tokens: 8 steps of 3,000 an update
    _, cpu = run("pretrain.sh", DRY_RUN="1", DATA_BIN=data / "bin", SAVE_DIR=data / "dry")
    assert "--cpu --update-freq 8" in cpu and "24000 tokens" in cpu
    # two nodes of 8 GPUs: every rank counts, torchrun starts fairseq-train
    _, nodes = run("pretrain.sh", DRY_RUN="1", NUM_GPUS="8", DATA_BIN=data / "bin",
                   SAVE_DIR=data / "dry", MAX_TOKENS="1500",
                   LAUNCHER="torchrun --nnodes 2 --node_rank 1 --nproc_per_node 8")
    assert re.search(r"^\+ torchrun --nnodes 2 --node_rank 1 --nproc_per_node 8 \S+/fairseq-train ",
                     nodes, re.M)
    assert "--distributed-world-size 16 --update-freq 1" in nodes and "24000 tokens" in nodes


def test_scale_paper_fine_tunes_with_the_papers_settings(data):
    online = paper_run(data, "unsup_online_bt.sh")
    train = [line for line in online.splitlines() if line.startswith("+ ") and "train" in line]
    assert len(train) == 1 and "/fairseq-train " in train[0]
    for option in ["--task unsupervised_translation", "--lambda-mass 0", "--lambda-bt 1",
                   "--lambda-dae 0", "--bt-beam 1", "--lr 0.0001", "--max-tokens 2000",
                   "--max-update 187500", "--validate-interval-updates 6250",
                   "--fp16 --distributed-world-size 8 --update-freq 1", *PAPER_MODEL]:
        assert f" {option} " in train[0] + " ", option
    assert "--max-valid-steps" not in online and "--max-tokens-valid" not in online
    # 300 sentences a language in parts of about 100: rounds 1, 2, 3 take parts 1, 2, 3
    offline = paper_run(data, "unsup_offline_bt.sh", MONO_LINES="100")
    assert [int(n) for n in re.findall(r"^\+ fairseq-generate .*--distributed-rank (\d+)",
                                       offline, re.M)] == [0, 0, 1, 1, 2, 2]
    assert offline.count("MAX_UPDATE=31250") == 6 and "TOKENS_PER_UPDATE=16000" in offline
    # each fine-tuning's own fairseq-train line, under the stage recipe's
    finetune = re.findall(r"^  \+ fairseq-train .*$", offline, re.M)
    assert len(finetune) == 6 and all(" --max-update 31250 " in line for line in finetune)
    assert all(" --fp16 --distributed-world-size 8 --update-freq 1" in line
               for line in finetune)
    low = paper_run(data, "low_resource.sh")
    for setting in ["MAX_UPDATE=20000", "LR=0.0001", "TOKENS_PER_UPDATE=16000",
                    "--label-smoothing 0", *PAPER_MODEL]:
        assert setting in low, setting
    assert low.count("bash ") == 8  # 2 directions x (MASS, random) x (train, test)
    summary = paper_run(data, "summarization.sh", DATA_BIN=data / "sum-bin",
                        REFERENCE=data / "test.summary")
    for setting in ["LR=0.0005", "WARMUP=4000", "TOKENS_PER_UPDATE=32768", "--max-epoch 25",
                    "--label-smoothing 0.1", "BEAM=5", "--lenpen 1.0",
                    "--no-repeat-ngram-size 3", "METRIC=rouge", "--max-source-positions 512"]:
        assert setting in summary, setting


def test_tiny_pretraining_makes_a_cross_lingual_mass_checkpoint_and_is_not_redone(data,
                                                                                   pretrained):
    checkpoint, log = pretrained
    assert "num_updates 20" in log and "valid on 'valid.fr' subset" in log
    # training leaves out the sentences longer than MAX_TOKENS (256) and counts
    # them; validation takes them all (one has more than 256 tokens)
    skipped = re.findall(r"masked_s2s \| skipping (\d+) sentences longer than \(256, 256\)", log)
    assert skipped and int(skipped[0]) == 2, skipped
    assert "valid on 'valid.en' subset" in log
    assert "Sentences lengths should not exceed" not in log
    state = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))
    assert state["cfg"]["task"]["langs"] == "en,fr" and state["cfg"]["task"]["mask_ratio"] == 0.5
    assert any("embed_langs" in name for name in state["model"])
    _, again = run("pretrain.sh", SCALE="tiny", DATA_BIN=data / "bin",
                   SAVE_DIR=data / "pretrain")
    assert "finished before, skipping" in again and "fairseq" not in again
    # with other settings it is not skipped, but refused: it says which differ
    code, other = run("pretrain.sh", False, SCALE="tiny", DATA_BIN=data / "bin",
                      SAVE_DIR=data / "pretrain", MAX_UPDATE="40", LR="0.0005")
    assert code == 1 and other.splitlines() == [
        f"error: {data / 'pretrain'} was trained by pretrain.sh with other settings:",
        "  LR: 0.001 before, 0.0005 now", "  MAX_UPDATE: 20 before, 40 now",
        "Use another SAVE_DIR, or train on from its checkpoint_last.pt with these settings: "
        f"delete {data / 'pretrain' / '.done.pretrain'}."]


def test_tiny_pretraining_runs_under_torchrun_with_two_cpu_ranks(data, tmp_path):
    launcher = f"torchrun --nproc_per_node 2 --master_addr 127.0.0.1 --master_port {free_port()}"
    _, log = run("pretrain.sh", SCALE="tiny", DATA_BIN=data / "bin", SAVE_DIR=tmp_path,
                 LAUNCHER=launcher)
    assert "2 process(es) x 256 x update-freq 1" in log  # one process takes update-freq 2
    assert "distributed init (rank 1)" in log and "num_updates 20" in log
    assert (tmp_path / "checkpoint_best.pt").is_file()


def test_the_slurm_script_runs_pretraining_under_torchrun_once_per_node(data, tmp_path):
    """slurm_pretrain.sh with stand-ins for srun (its command once per "node",
    here two processes on this machine) and scontrol (the first node), in a
    dry run: each node's torchrun command. (Two torchrun agents on the
    loopback train for real in test_launchers.py.)"""
    fake = tmp_path / "bin"
    fake.mkdir()
    # a node list long enough that the writer outlives a reader of one line
    (fake / "scontrol").write_text("#!/bin/sh\necho 127.0.0.1\n"
                                   "for i in $(seq 2 20000); do echo node$i; done\n")
    (fake / "srun").write_text(
        '#!/bin/bash\nshift 2  # --ntasks-per-node 1\n'
        'for node in 0 1; do SLURM_NODEID=$node "$@" || exit 1; done\n')
    for tool in ("scontrol", "srun"):
        (fake / tool).chmod(0o755)
    env = cli_env()
    env.update(PATH=f"{fake}{os.pathsep}{env['PATH']}", NUM_GPUS="8",
               SLURM_JOB_NODELIST="node[1-2]", SLURM_NNODES="2", SLURM_GPUS_ON_NODE="8",
               DRY_RUN="1", DATA_BIN=str(data / "bin"), SAVE_DIR=str(tmp_path / "ckpt"),
               MAX_TOKENS="1500")
    proc = subprocess.run(["bash", str(PAPER / "slurm_pretrain.sh")], cwd=REPO, env=env,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "== 2 nodes x 8 processes, rendezvous at 127.0.0.1:29500" in proc.stdout
    commands = re.findall(r"^\+ (torchrun .*?) \S+/fairseq-train .*--distributed-world-size 16 "
                          r"--update-freq 1$", proc.stdout, re.M)
    assert commands == [f"torchrun --nnodes 2 --node_rank {node} --nproc_per_node 8 "
                        "--master_addr 127.0.0.1 --master_port 29500" for node in (0, 1)]
    assert proc.stdout.count("of up to 24000 tokens (16 process(es)") == 2
    for name in ("SLURM_JOB_NODELIST", "DRY_RUN"):
        env.pop(name)
    missing = subprocess.run(["bash", str(PAPER / "slurm_pretrain.sh")], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "error: not in a SLURM job" in missing.stderr


def test_one_round_of_offline_back_translation_scores_both_directions(data, pretrained):
    work = data / "offline"
    _, log = run("unsup_offline_bt.sh", SCALE="tiny", ROUNDS="1", DATA_BIN=data / "bin",
                 REFERENCE_PREFIX=data / "test", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert re.search(r"round 1: en->fr translates part 1 of \d+ of", log)
    for direction in ("en-fr", "fr-en"):  # each slice of about MONO_LINES=40 sentences
        assert 0 < len((work / f"round1/gen-{direction}/pairs.en").read_text().splitlines()) < 80
    assert log.count("loading pretrained model from") == 2
    table = rows(work / "results.tsv")
    assert table[0] == ["round", "direction", "BLEU", "chrF"]
    assert [row[:2] for row in table[1:]] == [["1", "en-fr"], ["1", "fr-en"]]
    assert all(re.fullmatch(NUMBER, value) for row in table[1:] for value in row[2:])
    hypotheses = (work / "round1/test.en-fr.txt").read_text().splitlines()
    assert len(hypotheses) == 20 and "@@" not in " ".join(hypotheses)
    _, again = run("unsup_offline_bt.sh", SCALE="tiny", ROUNDS="1", DATA_BIN=data / "bin",
                   REFERENCE_PREFIX=data / "test", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert "fairseq" not in again and rows(work / "results.tsv") == table
    code, other = run("unsup_offline_bt.sh", False, SCALE="tiny", ROUNDS="1", MONO_LINES="80",
                      DATA_BIN=data / "bin", REFERENCE_PREFIX=data / "test",
                      PRETRAINED=pretrained[0], WORK_DIR=work)
    assert code == 1 and "  MONO_LINES: 40 before, 80 now\n" in other
    assert f"Use another WORK_DIR, or delete {work} to start over." in other


def test_online_back_translation_scores_detokenized_output_both_ways(data, pretrained):
    work = data / "online"
    # SCALE=tiny validates on a slice of the valid set: its VALID_PAIRS (16)
    # shortest pairs; here 8, one batch of 8 sentences each way (the whole
    # set, 20 pairs, makes a batch of 16 and one that fairseq 0.12 drops)
    _, dry = run("unsup_online_bt.sh", SCALE="tiny", DRY_RUN="1", DATA_BIN=data / "bin",
                 REFERENCE_PREFIX=data / "test", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert " --batch-size-valid 16 --max-valid-steps 0 " in dry
    _, log = run("unsup_online_bt.sh", SCALE="tiny", VALID_PAIRS="8", DATA_BIN=data / "bin",
                 REFERENCE_PREFIX=data / "test", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert "bt_loss" in log and "num_updates 6" in log
    assert re.search(r"valid on 'valid' subset .*\| bsz 16 \|", log), log[-3000:]
    table = rows(work / "results.detok.tsv")
    assert [row[0] for row in table] == ["direction", "en-fr", "fr-en"]
    assert all(re.fullmatch(NUMBER, value) for row in table[1:] for value in row[1:])
    assert len((work / "test.en-fr.detok.txt").read_text().splitlines()) == 20


def test_low_resource_fine_tuning_compares_mass_with_random_initialisation(data, pretrained):
    work = data / "low"
    _, log = run("low_resource.sh", SCALE="tiny", DIRECTIONS="en-fr", DATA_BIN=data / "bin",
                 REFERENCE_PREFIX=data / "test", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert log.count("loading pretrained model from") == 1  # the MASS run alone
    table = rows(work / "results.tsv")
    assert [row[:3] for row in table] == [["subset", "direction", "init"],
                                           ["train", "en-fr", "mass"],
                                           ["train", "en-fr", "random"]]
    assert all(re.fullmatch(NUMBER, value) for row in table[1:] for value in row[3:])


def test_summarization_fine_tunes_a_mass_checkpoint_and_scores_rouge(data, pretrained):
    work = data / "summarization"
    # the baseline (INITS=random) runs as in low_resource.sh, tested there
    _, log = run("summarization.sh", SCALE="tiny", INITS="mass", DATA_BIN=data / "sum-bin",
                 REFERENCE=data / "test.summary", PRETRAINED=pretrained[0], WORK_DIR=work)
    assert "== document->summary test: 15 sentences" in log
    assert "loading pretrained model from" in log
    table = rows(work / "results.tsv")
    assert table[0] == ["init", "ROUGE-1", "ROUGE-2", "ROUGE-L"]
    assert [row[0] for row in table[1:]] == ["mass"]
    assert all(re.fullmatch(NUMBER, value) for row in table[1:] for value in row[1:])


def test_the_unsupervised_chain_names_its_stages(data):
    _, out = run("unsupervised.sh", DRY_RUN="1", BT="online offline", DATA_BIN=data / "bin",
                 REFERENCE_PREFIX=data / "test", WORK_DIR=data / "chain")
    stages = re.findall(r"^\+ env .* bash \S+/examples/paper/(\S+)$", out, re.M)
    assert stages == ["pretrain.sh", "unsup_online_bt.sh", "unsup_offline_bt.sh"]
    code, bad = run("unsupervised.sh", False, BT="both", DATA_BIN=data / "bin",
                    REFERENCE_PREFIX=data / "test")
    assert code == 1 and 'error: BT=both: choose online, offline or "online offline"' in bad


def test_dry_run_prints_every_command_without_the_data(data):
    """DRY_RUN=1 with nothing at DATA_BIN yet: the paper-size fairseq-train
    lines of pre-training and of both back-translations are printed."""
    nowhere = dict(SCALE="paper", DRY_RUN="1", NUM_GPUS="8", DATA_BIN="/nowhere/data-bin",
                   REFERENCE_PREFIX="/nowhere/ref/test", PRETRAINED="/nowhere/mass.pt",
                   WORK_DIR=data / "dry-nowhere", SAVE_DIR=data / "dry-nowhere")
    for name, pattern in [("pretrain.sh", r"^\+ \S+/fairseq-train /nowhere/data-bin "),
                          ("unsup_online_bt.sh", r"^\+ \S+/fairseq-train /nowhere/data-bin "),
                          ("unsup_offline_bt.sh", r"^  \+ fairseq-train \S+/bin-en-fr ")]:
        _, out = run(name, **nowhere)
        assert re.search(pattern + r".* --max-update \d+ ", out, re.M), name
        assert "dry run: /nowhere/data-bin/dict.txt is not there (DATA_BIN)" in out, name
    assert not (data / "dry-nowhere").exists()


def test_a_data_bin_read_with_another_dictionary_is_refused(data, tmp_path):
    """The dictionaries rewritten after binarizing (the same symbols in
    another order, as another tool may write them): fairseq would train on
    them without a word; the recipes name the files made with the old one
    and stop."""
    copy = tmp_path / "bin"
    shutil.copytree(data / "bin", copy)
    for name in ("dict.txt", "dict.en.txt", "dict.fr.txt"):
        symbols = (copy / name).read_text().splitlines()
        (copy / name).write_text("".join(line + "\n" for line in reversed(symbols)))
    code, out = run("low_resource.sh", False, SCALE="tiny", DATA_BIN=copy,
                    REFERENCE_PREFIX=data / "test", PRETRAINED="unused", INITS="random",
                    WORK_DIR=tmp_path / "w")
    assert code == 1 and f"error: {copy}: files binarized with another dictionary" in out
    assert "test.en-fr.fr (" in out and "train.en-fr.en (" in out and "train.en (" not in out
    assert f"dict.fr.txt: {len(symbols)} symbols, md5 " in out
    code, out = run("pretrain.sh", False, SCALE="tiny", DATA_BIN=copy, SAVE_DIR=tmp_path / "p")
    assert code == 1 and "train.en (" in out and f"dict.txt: {len(symbols)} symbols" in out
    assert not (tmp_path / "w").exists() and not (tmp_path / "p").exists()
